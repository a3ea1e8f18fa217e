package pipeline_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// The kill and restart tests run the pipeline in a child process — this
// test binary re-executed with -test.run naming one test that runs the
// pipeline on the SLO file an environment variable names — so that they
// can SIGKILL it.

// restartChild is a running child process.
type restartChild struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// startChild runs the test named test in a child process (this test
// binary re-executed, 10 min timeout) with env set to cfgPath, its stdout
// and stderr in logPath; attr, when not nil, is the process's SysProcAttr.
// The child is killed at the end of the test if still running.
func startChild(t *testing.T, test, env, cfgPath, logPath string, attr *syscall.SysProcAttr) *restartChild {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), env+"="+cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &restartChild{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	t.Cleanup(func() {
		if !c.exited() {
			_ = cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// runChildPipeline is the child's side: it runs the pipeline on the SLO
// file at path with opts (Config and Logger, INFO text to stderr, set
// here) until SIGTERM, failing the test on an error.
func runChildPipeline(t *testing.T, path string, opts pipeline.Options) {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	opts.Config = cfg
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p, err := pipeline.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

func (c *restartChild) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the child and waits for it to be gone.
func (c *restartChild) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
}

// terminate asks the child to stop (SIGTERM: it checkpoints and leaves
// its groups) and fails the test unless it exits cleanly within 60 s.
func (c *restartChild) terminate(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("child did not stop within 60s of SIGTERM; log %s", c.logPath)
	}
	var ee *exec.ExitError
	if c.err != nil && !errors.As(c.err, &ee) {
		t.Fatalf("child: %v", c.err)
	}
	if c.err != nil {
		b, _ := os.ReadFile(c.logPath)
		t.Fatalf("child exited with %v; log:\n%s", c.err, tail(b, 4000))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
