package pipeline_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLiveStallAndRejectionsAreLoud: while valid traffic flows live on
// source partitions 1-5, the producer of partition 0 goes on sending valid
// spans but its clock stops (every span ends at the same instant): it
// holds the watermark of every keyed partition, and idleness cannot help,
// as records keep coming. Partition 1 also carries malformed records. The
// rejections must be logged — the first of the kind at once, then a count
// per interval (log.rejections_every 1s); the stalled watermark must be
// logged (WARN) and make Ready fail naming it within
// time.watermark_stall_evaluations (3) evaluation intervals (1s) of wall
// time; fusebox_event_time_lag_seconds must show the lag; and once the
// clock runs again the watermark moves, an INFO says so and Ready is nil.
// Before the fix none of it was logged and /readyz stayed 200.
func TestLiveStallAndRejectionsAreLoud(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := liveConfig(t, liveOpts{brokers: k.Brokers, suffix: ".loud", extra: "log: {rejections_every: 1s}\n"})
	cfg.Time.WatermarkStallEvaluations = 3
	logs := &logBuffer{}
	vlog := &verdictLog{}
	run := startRunWith(t, pipeline.Options{Config: cfg, InsecureUnsigned: true, ExtraSinks: []engine.Sink{vlog}, Logger: logs.logger()})
	healthy := []string{"acme", "globex"}
	pub := startPublisher(t, k, healthy, 1, 2, 3, 4, 5)
	var stopped atomic.Int64 // the stuck clock's time, 0 while it runs
	clock := func() time.Time {
		if s := stopped.Load(); s != 0 {
			return time.Unix(0, s)
		}
		return time.Now()
	}
	stuck := startPublisherClock(t, k, []string{"hooli"}, clock, 0)
	vlog.waitVerdicts(t, time.Now(), 30*time.Second, healthy...)
	testharness.Eventually(t, 10*time.Second, "ready", func() bool { return run.p.Ready() == nil })

	silent := time.Now()
	stopped.Store(silent.UnixNano())
	stopBad := make(chan struct{})
	badDone := make(chan struct{})
	go func() {
		defer close(badDone)
		for {
			select {
			case <-stopBad:
				return
			case <-time.After(100 * time.Millisecond):
			}
			produceSync(t, pub.cl, &kgo.Record{Topic: "otlp_spans", Partition: 1, Value: []byte{0x0a, 0xff, 0xff}})
		}
	}()

	took := testharness.Eventually(t, 20*time.Second, "readyz reports the stalled watermark", func() bool {
		err := run.p.Ready()
		return err != nil && strings.Contains(err.Error(), "watermark") && strings.Contains(err.Error(), "has not moved")
	})
	t.Logf("stall reported %v after the clock stopped: %v", took.Round(10*time.Millisecond), run.p.Ready())
	if n := logs.count(`"level":"WARN"`, "watermark stalled while records arrive"); n == 0 {
		t.Errorf("no WARN for the stalled watermark")
	}
	var lag float64
	var s observe.Snapshot
	run.p.Metrics().Collect(&s)
	for _, x := range s.Extra {
		if x.Name == "fusebox_event_time_lag_seconds" {
			lag = max(lag, x.Value)
		}
	}
	if want := time.Since(silent).Seconds() - 1; lag < want {
		t.Errorf("fusebox_event_time_lag_seconds %.1f, want at least %.1f while stalled", lag, want)
	}
	t.Logf("event-time lag while stalled: %.1fs", lag)
	testharness.Eventually(t, 10*time.Second, "a per-interval count of the rejections", func() bool {
		return logs.count("records still rejected", `"kind":"malformed"`, `"partition":1`) > 0
	})
	if n := logs.count("the first of its kind", `"kind":"malformed"`, `"partition":1`); n != 1 {
		t.Errorf("%d first-of-kind log lines for partition 1's malformed records, want 1", n)
	}
	close(stopBad)
	<-badDone

	// The clock runs again: the watermark moves, Ready recovers.
	back := time.Now()
	stopped.Store(0)
	took = testharness.Eventually(t, 20*time.Second, "ready again", func() bool { return run.p.Ready() == nil })
	t.Logf("ready again %v after the clock ran again", took.Round(10*time.Millisecond))
	if n := logs.count(`"level":"INFO"`, "watermark moves again"); n == 0 {
		t.Errorf("no INFO when the watermark moved again")
	}
	vlog.waitVerdicts(t, back, 15*time.Second, healthy...)
	stuck.halt()
	pub.halt()
	run.stop(t)
}

// TestLiveFailingSinkIsLoud kills the ClickHouse server under a running
// pipeline while valid traffic flows, then starts it again: the failure
// must be logged when it begins and when it ends, both at WARN, and Ready must name
// the failing sink meanwhile and be nil after. Before the fix inserts
// failed for the whole outage with no log line and /readyz 200.
func TestLiveFailingSinkIsLoud(t *testing.T) {
	k := testharness.StartKafka(t)
	srv := testharness.StartPrivateClickHouse(t)
	cfg := liveConfig(t, liveOpts{brokers: k.Brokers, suffix: ".sinkfail",
		sinks: fmt.Sprintf("  clickhouse: {addr: [%s], database: fusebox_sinkfail, username: %q, flush_every: 200ms, dial_timeout: 1s}\n", srv.Addr, srv.Username)})
	logs := &logBuffer{}
	vlog := &verdictLog{}
	run := startRunWith(t, pipeline.Options{Config: cfg, InsecureUnsigned: true, ExtraSinks: []engine.Sink{vlog}, Logger: logs.logger()})
	healthy := []string{"acme", "globex"}
	pub := startPublisher(t, k, healthy)
	vlog.waitVerdicts(t, time.Now(), 30*time.Second, healthy...)
	testharness.Eventually(t, 10*time.Second, "ready", func() bool { return run.p.Ready() == nil })

	srv.Kill()
	took := testharness.Eventually(t, 20*time.Second, "readyz names the failing sink", func() bool {
		err := run.p.Ready()
		return err != nil && strings.Contains(err.Error(), "sink clickhouse failing")
	})
	t.Logf("ClickHouse down: reported %v after the kill: %v", took.Round(10*time.Millisecond), run.p.Ready())
	if n := logs.count(`"level":"WARN"`, "sink failing", `"sink":"clickhouse"`); n != 1 {
		t.Errorf("%d WARN lines for the failing sink, want 1 (when it begins)", n)
	}
	// Absence: the outage goes on for 2 s; no more WARN lines may show.
	time.Sleep(2 * time.Second)
	srv.Start()
	took = testharness.Eventually(t, 60*time.Second, "ready after ClickHouse is back", func() bool { return run.p.Ready() == nil })
	t.Logf("ClickHouse back: ready %v after the restart", took.Round(10*time.Millisecond))
	if n := logs.count(`"level":"WARN"`, "sink recovered", `"sink":"clickhouse"`); n != 1 {
		t.Errorf("%d WARN lines for the recovered sink, want 1", n)
	}
	if n := logs.count(`"level":"WARN"`, "sink failing"); n != 1 {
		t.Errorf("%d WARN lines for the failing sink over the outage, want 1", n)
	}
	vlog.waitVerdicts(t, time.Now(), 15*time.Second, healthy...)
	_ = schemas.StatusOK
	pub.halt()
	run.stop(t)
}
