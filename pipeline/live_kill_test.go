package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// liveChildEnv names the SLO file TestLiveChildProcess runs.
const liveChildEnv = "FUSEBOX_LIVE_CHILD_CONFIG"

// TestLiveRestartAfterSIGKILLIsBackWithinSeconds runs the pipeline as a
// child process with kafka.instance_id set and kgo's default session
// timeout (45s), while valid traffic flows live; it kills the child with
// SIGKILL twice, restarting it at once each time, and measures the time
// from each restart to the first verdict of a new evaluation on the
// verdict topic. With static membership the restarted process takes the
// dead member's place and gets its partitions back as soon as it rejoins;
// before, it waited for the dead member's session to expire (~45s) on
// every partition.
func TestLiveRestartAfterSIGKILLIsBackWithinSeconds(t *testing.T) {
	const bound = 15 * time.Second
	k := testharness.StartKafka(t)
	dir := t.TempDir()
	o := liveOpts{brokers: k.Brokers, suffix: ".kill", instance: "fusebox-live-kill-1"}
	cfgPath := filepath.Join(dir, "fusebox.yaml")
	if err := os.WriteFile(cfgPath, []byte(liveYAML(o)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := liveConfig(t, o)
	col := startVerdictCollector(t, k, cfg.Topics.Verdicts)
	pub := startPublisher(t, k, []string{"acme", "globex"})

	child := startLiveChild(t, cfgPath, filepath.Join(dir, "child0.log"))
	if !testharness.Poll(60*time.Second, func() bool { return col.newest() > 0 }) {
		t.Fatalf("no verdict from the first child within 60s; log %s", child.logPath)
	}
	for i := 1; i <= 2; i++ {
		time.Sleep(2 * time.Second) // a running process, checkpoints taken
		child.kill(t)
		seen := col.newest()
		restart := time.Now()
		child = startLiveChild(t, cfgPath, filepath.Join(dir, fmt.Sprintf("child%d.log", i)))
		if !testharness.Poll(60*time.Second, func() bool { return col.newest() > seen }) {
			t.Fatalf("restart %d: no new verdict within 60s; log %s", i, child.logPath)
		}
		back := time.Since(restart)
		t.Logf("kill -9 #%d: restart to first verdict of a new evaluation: %v", i, back.Round(10*time.Millisecond))
		if back > bound {
			t.Errorf("kill -9 #%d: the restarted process judged again after %v, want within %v", i, back, bound)
		}
	}
	child.kill(t)
	pub.halt()
}

// TestLiveChildProcess is the child of
// TestLiveRestartAfterSIGKILLIsBackWithinSeconds; it does nothing unless
// liveChildEnv is set.
func TestLiveChildProcess(t *testing.T) {
	path := os.Getenv(liveChildEnv)
	if path == "" {
		return
	}
	runChildPipeline(t, path, pipeline.Options{InsecureUnsigned: true})
}

// startLiveChild runs TestLiveChildProcess on cfgPath in a child process
// (this test binary re-executed), its output in logPath.
func startLiveChild(t *testing.T, cfgPath, logPath string) *restartChild {
	t.Helper()
	// Pdeathsig: the child does not outlive this test binary.
	return startChild(t, "TestLiveChildProcess", liveChildEnv, cfgPath, logPath, &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL})
}

// verdictCollector reads a verdict topic and keeps the newest window end.
type verdictCollector struct {
	mu  sync.Mutex
	max int64
}

func (c *verdictCollector) newest() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

func startVerdictCollector(t *testing.T, k *testharness.Kafka, topic string) *verdictCollector {
	t.Helper()
	cl := k.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	c := &verdictCollector{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				var v struct {
					End int64 `json:"window_end_unix_nano"`
				}
				if json.Unmarshal(r.Value, &v) == nil {
					c.mu.Lock()
					c.max = max(c.max, v.End)
					c.mu.Unlock()
				}
			})
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return c
}
