package pipeline_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// arrivalLog is an engine.Sink that keeps every verdict and rollup with
// the wall time it reached the sinks.
type arrivalLog struct {
	mu       sync.Mutex
	verdicts []arrived[schemas.Verdict]
	rollups  []arrived[schemas.Rollup]
}

type arrived[T any] struct {
	v  T
	at time.Time
}

func (l *arrivalLog) Write(_ context.Context, out schemas.Output) error {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range out.Verdicts {
		l.verdicts = append(l.verdicts, arrived[schemas.Verdict]{v, now})
	}
	for _, r := range out.Rollups {
		l.rollups = append(l.rollups, arrived[schemas.Rollup]{r, now})
	}
	return nil
}
func (l *arrivalLog) Flush(context.Context) error { return nil }
func (l *arrivalLog) Close(context.Context) error { return nil }

// verdictAfter returns when the first verdict of tenant that judged data
// (not insufficient_data) for a window ending after end (Unix ns) came.
func (l *arrivalLog) verdictAfter(tenant string, end int64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.verdicts {
		if x.v.Key.Tenant == tenant && x.v.WindowEndUnixNano > end && x.v.Status != schemas.StatusInsufficientData {
			return x.at, true
		}
	}
	return time.Time{}, false
}

// rollupOf returns when the rollup of tenant's minute starting at minute
// came, and its calls.
func (l *arrivalLog) rollupOf(tenant string, minute int64) (time.Time, int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.rollups {
		if x.v.Key.Tenant == tenant && x.v.MinuteUnixNano == minute && x.v.N > 0 {
			return x.at, x.v.N, true
		}
	}
	return time.Time{}, 0, false
}

// calls sums the calls of every rollup of tenant.
func (l *arrivalLog) calls(tenant string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, x := range l.rollups {
		if x.v.Key.Tenant == tenant {
			n += x.v.N
		}
	}
	return n
}

// TestLivePauseJudgesTheLastCalls: live traffic (event time = wall clock)
// on every source partition, then every publisher pauses. The window
// holding the last calls must be judged, and the minute holding them
// rolled up, without newer traffic: the all-idle watermark advances with
// the silence the router stamps on its repeated idle markers, to
// newest + silence - allowed_lateness. On main it stayed at newest -
// allowed_lateness, and neither came (this test timed out there).
//
// Settings: tail SLO evaluated every 1s over 4s, allowed lateness 1s, idle
// source timeout 1s, minute rollups. The traffic stops 55-56 s into a wall
// minute, so the rollup is due within the test. Bounds: the verdict of
// the window ending at the first boundary b after the last call E comes
// within (b - E) + lateness + idle timeout * 5/4 (the router's first
// marker after the timeout, checked every quarter of it, then one per
// timeout) + 2s of pipeline delay; the rollup within (minute end - E) +
// the same.
//
// Then, still in the pause, one call 500ms behind the wall clock (within
// the lateness) counts, and one 4s behind it is late: the advance is
// real, and bounded as stated.
func TestLivePauseJudgesTheLastCalls(t *testing.T) {
	k := testharness.StartKafka(t)
	o := liveOpts{brokers: k.Brokers, suffix: ".pause"}
	yml := strings.Replace(liveYAML(o), "rollups: {enabled: false}", "rollups: {enabled: true}", 1)
	cfg, err := config.Parse("live-pause.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	log := &arrivalLog{}
	run := startRunWith(t, pipeline.Options{Config: cfg, InsecureUnsigned: true, ExtraSinks: []engine.Sink{log}})
	tenants := []string{"acme", "globex"}

	// Publish until at least 3s have passed and the wall clock is 55 s
	// into a minute (at most 63s).
	var last atomic.Int64
	clock := func() time.Time {
		now := time.Now()
		last.Store(now.UnixNano())
		return now
	}
	start := time.Now()
	pub := startPublisherClock(t, k, tenants, clock)
	for {
		now := time.Now()
		if sec := now.Sub(now.Truncate(time.Minute)); now.Sub(start) >= 3*time.Second && sec >= 55*time.Second && sec < 56*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	pub.halt()
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = pub.cl.Flush(fctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if pub.errs.Load() > 0 {
		t.Fatalf("%d produce errors", pub.errs.Load())
	}
	lastCall := time.Unix(0, last.Load())
	sent := pub.sent.Load()
	minute := lastCall.Truncate(time.Minute)

	every, lateness, idle := time.Second, cfg.Time.AllowedLateness, cfg.Time.IdleSourceTimeout
	b := lastCall.Truncate(every).Add(every)
	vBound := b.Sub(lastCall) + lateness + idle*5/4 + 2*time.Second
	rBound := minute.Add(time.Minute).Sub(lastCall) + lateness + idle*5/4 + 2*time.Second
	var vAt, rAt time.Time
	if !testharness.Poll(rBound+30*time.Second, func() bool {
		for _, tn := range tenants {
			v, ok := log.verdictAfter(tn, lastCall.UnixNano())
			r, _, ok2 := log.rollupOf(tn, minute.UnixNano())
			if !ok || !ok2 {
				return false
			}
			vAt, rAt = latest(vAt, v), latest(rAt, r)
		}
		return true
	}) {
		_, vok := log.verdictAfter("acme", lastCall.UnixNano())
		_, _, rok := log.rollupOf("acme", minute.UnixNano())
		t.Fatalf("after the pause: verdict of the window holding the last call (%s) came: %v; rollup of its minute: %v; keyed watermarks %v",
			lastCall.Format(time.RFC3339Nano), vok, rok, run.p.Keyed().Partitions())
	}
	vDelay, rDelay := vAt.Sub(lastCall), rAt.Sub(lastCall)
	t.Logf("last call %s (%d calls over %v): its window's verdict came %v after it (bound %v), its minute's rollup %v after it (bound %v)",
		lastCall.Format("15:04:05.000"), sent, lastCall.Sub(start).Round(time.Millisecond), vDelay.Round(time.Millisecond), vBound, rDelay.Round(time.Millisecond), rBound)
	if vDelay > vBound {
		t.Errorf("verdict of the window holding the last call came %v after it, want within %v", vDelay, vBound)
	}
	if rDelay > rBound {
		t.Errorf("rollup of the minute holding the last call came %v after it, want within %v", rDelay, rBound)
	}
	// Every call is in a rollup (the last minute's included): none late.
	if !testharness.Poll(10*time.Second, func() bool { return log.calls("acme")+log.calls("globex") == sent }) {
		t.Errorf("rollups count %d calls, %d were sent", log.calls("acme")+log.calls("globex"), sent)
	}
	ks := run.p.Keyed().Stats()
	if ks.LateSpans > 0 {
		t.Fatalf("%d late spans before the pause calls", ks.LateSpans)
	}

	// In the pause: a call 500ms behind the wall clock counts; one 4s
	// behind it is late (the watermark moved past it).
	names := schemas.DefaultAttributeNames()
	now := time.Now()
	produceSync(t, pub.cl,
		&kgo.Record{Topic: "otlp_spans", Partition: 0, Value: schemas.EncodeOTLPProto(nil, []schemas.Span{liveSpan(1<<43, "acme", "gpt-4o", now.Add(-500*time.Millisecond))}, names)},
		&kgo.Record{Topic: "otlp_spans", Partition: 1, Value: schemas.EncodeOTLPProto(nil, []schemas.Span{liveSpan(1<<43+1, "acme", "gpt-4o", now.Add(-4*time.Second))}, names)})
	if !testharness.Poll(15*time.Second, func() bool {
		st := run.p.Keyed().Stats()
		return st.Spans+st.LateSpans == ks.Spans+ks.LateSpans+2
	}) {
		t.Fatalf("the two calls in the pause were not applied: %+v", run.p.Keyed().Stats())
	}
	if st := run.p.Keyed().Stats(); st.Spans != ks.Spans+1 || st.LateSpans != 1 {
		t.Errorf("calls in the pause: %d counted, %d late; want the one 500ms behind the clock counted, the one 4s behind late",
			st.Spans-ks.Spans, st.LateSpans)
	}
	run.stop(t)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
