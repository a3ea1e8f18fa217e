package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// restartChildEnv names the SLO file a child process runs the pipeline on.
const restartChildEnv = "FUSEBOX_RESTART_CHILD_CONFIG"

// TestKafkaRestartAfterSIGKILLMatchesUninterrupted runs the pipeline as a child
// process (this test binary re-executed), kills it with SIGKILL at several
// points of the stream — half a second after it starts (joining its
// groups, restoring state), and once 25%, 50% and 75% of the verdicts are
// out — restarting it each time, and compares what reached
// the verdict and fuse topics with an uninterrupted run's: every verdict id
// with the same value (the stable JSON of every field), every fuse command,
// nothing extra, and no id written twice with different values. Replayed
// output may be written twice; it must be identical.
func TestKafkaRestartAfterSIGKILLMatchesUninterrupted(t *testing.T) {
	t.Parallel()
	want := clusterReference(t)
	k := startTestCluster(t)
	publishClusterTraffic(t, k, 0, 0)
	dir := t.TempDir()
	cfgPath := writeClusterConfig(t, dir, k.Brokers)
	col := startClusterCollector(t, k)

	total := len(want.verdicts)
	for i, frac := range []float64{0, 0.25, 0.5, 0.75} {
		child := startRestartChild(t, cfgPath, filepath.Join(dir, fmt.Sprintf("child%d.log", i)))
		if frac == 0 {
			// Killed while it joins its groups and restores state.
			time.Sleep(500 * time.Millisecond)
		} else {
			// Killed once the output reaches frac of the verdicts, and this
			// child has written at least 200 new ones (a restart replays
			// up to a checkpoint interval first).
			target := max(int(frac*float64(total)), col.count()+200)
			if !testharness.Poll(90*time.Second, func() bool { return col.count() >= target || child.exited() }) {
				t.Fatalf("child %d: %d distinct verdicts after 90s, waiting for %d", i, col.count(), target)
			}
		}
		if child.exited() {
			t.Fatalf("child %d exited on its own: %v; log %s", i, child.err, child.logPath)
		}
		reached := col.count()
		child.kill(t)
		t.Logf("child %d SIGKILLed at %d of %d distinct verdicts", i, reached, total)
	}
	last := startRestartChild(t, cfgPath, filepath.Join(dir, "child-last.log"))
	// Wait for the commands too: a child killed after its last verdicts
	// were durable but before the commands citing them were produced
	// leaves those commands to the last child's replay, which on a loaded
	// machine can take longer than the grace period below.
	if !testharness.Poll(120*time.Second, func() bool {
		n, _ := col.missing(want, 1<<62)
		nc, _ := col.missingCommands(want)
		return (n == 0 && nc == 0) || last.exited()
	}) || last.exited() {
		n, example := col.missing(want, 1<<62)
		nc, exampleCmd := col.missingCommands(want)
		t.Fatalf("after the last restart %d verdicts (e.g. %s) and %d fuse commands (e.g. %s) of the uninterrupted run are still missing; child exited %v: %v; log %s",
			n, example, nc, exampleCmd, last.exited(), last.err, last.logPath)
	}
	// Absence: let anything the last child would still write (a duplicate
	// the comparison must see) arrive, then stop it the polite way.
	time.Sleep(2 * time.Second)
	last.terminate(t)
	got := readClusterOutput(t, k)
	compareClusterOutputs(t, "restarted 4 times", want, got)
	t.Logf("restarted run: %d distinct verdicts from %d verdict records, %d fuse commands", len(got.verdicts), got.records, len(got.commands))
}

// TestRestartChildProcess is not a test of its own: it is the pipeline
// process of TestKafkaRestartAfterSIGKILLMatchesUninterrupted, run when this
// test binary is re-executed with FUSEBOX_RESTART_CHILD_CONFIG set, until
// SIGTERM (or SIGKILL). Without the variable it does nothing.
func TestRestartChildProcess(t *testing.T) {
	path := os.Getenv(restartChildEnv)
	if path == "" {
		return
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p, err := pipeline.New(ctx, pipeline.Options{Config: cfg, Logger: log, KgoOpts: clusterGroupOpts()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// restartChild is a running child process.
type restartChild struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

func startRestartChild(t *testing.T, cfgPath, logPath string) *restartChild {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestartChildProcess$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), restartChildEnv+"="+cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
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
