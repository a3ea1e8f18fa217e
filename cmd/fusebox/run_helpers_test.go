package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/gen"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
)

// logLines collects what a fusebox run writes to stderr (JSON log lines)
// and lets a test wait for one.
type logLines struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines []string
	wake  chan struct{}
}

func newLogLines() *logLines { return &logLines{wake: make(chan struct{}, 1)} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line)
			break
		}
		l.lines = append(l.lines, strings.TrimSpace(line))
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + "\n" + l.buf.String()
}

// field returns the value of key in the first JSON line whose msg
// contains msg, waiting up to d.
func (l *logLines) field(t *testing.T, msg, key string, d time.Duration) string {
	t.Helper()
	end := time.Now().Add(d)
	for i := 0; ; {
		l.mu.Lock()
		for ; i < len(l.lines); i++ {
			var m map[string]any
			if json.Unmarshal([]byte(l.lines[i]), &m) != nil {
				continue
			}
			if s, _ := m["msg"].(string); strings.Contains(s, msg) {
				l.mu.Unlock()
				v, _ := m[key].(string)
				return v
			}
		}
		l.mu.Unlock()
		if time.Now().After(end) {
			t.Fatalf("no log line %q within %v; stderr:\n%s", msg, d, l.String())
		}
		select {
		case <-l.wake:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testKeyFile writes a fuse key file with one key, id k1.
func testKeyFile(t *testing.T, dir string) string {
	secret := bytes.Repeat([]byte{0x5a}, 32)
	return writeFile(t, dir, "fuse.keys", "k1:"+hex.EncodeToString(secret)+"\n")
}

// publishScenario publishes sc's traffic from start, unpaced, and returns
// what the broker acknowledged.
func publishScenario(t *testing.T, brokers []string, sc traffic.Scenario, start time.Time, opts ...kgo.Opt) gen.Summary {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(5 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cfg := gen.DefaultConfig()
	cfg.Scenario, cfg.Start, cfg.Speedup, cfg.ProgressEvery = sc, start, 0, 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := gen.Run(ctx, cfg, cl)
	if err != nil {
		t.Fatalf("gen: %v", err)
	}
	return sum
}

// publishScenarioPaced is publishScenario with event time running speedup
// times faster than the wall clock, as a live service's traffic would.
func publishScenarioPaced(t *testing.T, brokers []string, sc traffic.Scenario, start time.Time, speedup float64) gen.Summary {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Error(err)
		return gen.Summary{}
	}
	defer cl.Close()
	cfg := gen.DefaultConfig()
	cfg.Scenario, cfg.Start, cfg.Speedup, cfg.ProgressEvery = sc, start, speedup, 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := gen.Run(ctx, cfg, cl)
	if err != nil {
		t.Errorf("gen: %v", err)
	}
	return sum
}

// scrape returns the fusebox_* samples of /metrics, keyed as printed:
// `name{label="v",...}` (labels in Prometheus's sorted order).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "fusebox_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad metrics line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// get returns the status and body of an HTTP GET.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// readJSONL returns the verdicts and commands of a JSONL sink file (whole
// lines only).
func readJSONL(t *testing.T, path string) ([]schemas.Verdict, []schemas.FuseCommand) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		t.Fatal(err)
	}
	vs, cs, err := jsonlsink.Read(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return vs, cs
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runProcess is `fusebox run` as a child process: this test binary
// re-executed as main (envAsMain), its stderr collected.
type runProcess struct {
	cmd    *exec.Cmd
	stderr *logLines
	exited chan error
	// addr is the listener serving /metrics, read from the run's log line.
	addr string
}

// startRunProcess starts `fusebox run --config cfgPath` and waits up to 30 s for
// its "serving /metrics" line; it fails the test if either does not
// happen. The process is killed at the end of the test if still running.
func startRunProcess(t *testing.T, cfgPath string) *runProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "run", "--config", cfgPath)
	cmd.Env = append(os.Environ(), envAsMain+"=1")
	p := &runProcess{cmd: cmd, stderr: newLogLines(), exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	p.addr = p.stderr.field(t, "serving /metrics", "addr", 30*time.Second)
	return p
}

// sigterm sends the run SIGTERM (a clean stop).
func (p *runProcess) sigterm(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// waitClean fails the test unless the run exits with status 0 within
// 60 s (of the SIGTERM sent before).
func (p *runProcess) waitClean(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, p.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit within 60 s of SIGTERM; stderr:\n%s", p.stderr.String())
	}
}
