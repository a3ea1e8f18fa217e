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

// TestLivePauseJudgesTheLastCalls: live traffic (event time follows the
// wall clock) on every source partition, then every publisher pauses. The
// window holding the last calls must be judged, and the minute holding
// them rolled up, during the pause, before any newer traffic: the
// all-idle watermark advances with the silence the router's repeated idle
// markers measure, to newest + silence - allowed_lateness. On main before
// the all-idle advance it stayed at newest - allowed_lateness, and neither
// came (the poll below timed out).
//
// Settings: tail SLO evaluated every 1s over 4s, allowed lateness 1s, idle
// source timeout 1s, minute rollups. Rollups are per wall minute (no
// knob), so instead of waiting for :55 of a minute the publisher's event
// times run ahead of the wall clock by a fixed offset (under 60s, within
// time.max_future_skew) that puts the last call 55s into an event-time
// minute after 3s of traffic: the silence is measured on the same clock
// as the records, so the offset changes nothing but the wait.
//
// What is asserted is order, not latency: the verdict and the rollup come
// while the keyed stage has applied no call after the last one, with its
// watermark past newest - lateness (where idle markers alone can have
// moved it). The delays are logged.
//
// Then, still in the pause, one call 500ms behind the clock (within the
// lateness) counts, and one 4s behind it is late: the advance is real,
// and bounded as stated.
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

	// Event time = wall clock + offset, the offset putting 3s from now at
	// 55.5s into a minute.
	start := time.Now()
	end := start.Add(3 * time.Second)
	offset := (55500*time.Millisecond - end.Sub(end.Truncate(time.Minute)) + time.Minute) % time.Minute
	var last atomic.Int64
	clock := func() time.Time {
		now := time.Now().Add(offset)
		last.Store(now.UnixNano())
		return now
	}
	pub := startPublisherClock(t, k, tenants, clock)
	time.Sleep(time.Until(end))
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
	pauseAt := time.Now()
	lastCall := time.Unix(0, last.Load())
	sent := pub.sent.Load()
	minute := lastCall.Truncate(time.Minute)

	var vAt, rAt time.Time
	var atVerdict engine.WorkerStats
	var wmAtVerdict map[int32]int64
	if !testharness.Poll(60*time.Second, func() bool {
		for _, tn := range tenants {
			v, ok := log.verdictAfter(tn, lastCall.UnixNano())
			r, _, ok2 := log.rollupOf(tn, minute.UnixNano())
			if !ok || !ok2 {
				return false
			}
			vAt, rAt = latest(vAt, v), latest(rAt, r)
		}
		atVerdict, wmAtVerdict = run.p.Keyed().Stats(), run.p.Keyed().Partitions()
		return true
	}) {
		_, vok := log.verdictAfter("acme", lastCall.UnixNano())
		_, _, rok := log.rollupOf("acme", minute.UnixNano())
		t.Fatalf("in the pause: verdict of the window holding the last call (%s) came: %v; rollup of its minute: %v; keyed watermarks %v",
			lastCall.Format(time.RFC3339Nano), vok, rok, run.p.Keyed().Partitions())
	}
	t.Logf("last call %s (event time, %v ahead of the clock; %d calls over %v): its window's verdict came %v after the pause, its minute's rollup %v after it",
		lastCall.Format("15:04:05.000"), offset.Round(time.Millisecond), sent, pauseAt.Sub(start).Round(time.Millisecond),
		vAt.Sub(pauseAt).Round(time.Millisecond), rAt.Sub(pauseAt).Round(time.Millisecond))
	// The order: judged with every call folded in and none newer, the
	// watermark beyond what the calls alone allow.
	if atVerdict.Spans != sent || atVerdict.LateSpans != 0 {
		t.Fatalf("when the last window was judged the keyed stage had %d calls (%d late), want the %d sent, none late", atVerdict.Spans, atVerdict.LateSpans, sent)
	}
	for part, wm := range wmAtVerdict {
		if wm <= lastCall.UnixNano()-int64(cfg.Time.AllowedLateness) {
			t.Errorf("keyed partition %d: watermark %s when the last window was judged, want past the newest call - lateness (%s): the idle markers moved it",
				part, time.Unix(0, wm).UTC().Format(time.RFC3339Nano), lastCall.Add(-cfg.Time.AllowedLateness).UTC().Format(time.RFC3339Nano))
		}
	}
	// Every call is in a rollup (the last minute's included): none late.
	if !testharness.Poll(10*time.Second, func() bool { return log.calls("acme")+log.calls("globex") == sent }) {
		t.Errorf("rollups count %d calls, %d were sent", log.calls("acme")+log.calls("globex"), sent)
	}
	ks := run.p.Keyed().Stats()
	if ks.LateSpans > 0 {
		t.Fatalf("%d late spans before the pause calls", ks.LateSpans)
	}

	// In the pause: a call 500ms behind the clock counts; one 4s behind
	// it is late (the watermark moved past it).
	names := schemas.DefaultAttributeNames()
	now := time.Now().Add(offset)
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

// TestLivePauseRouterRestartJudgesTheLastCalls: live traffic, then every
// publisher pauses and the process is restarted (a deploy during a quiet
// period; the first process's idle timeout is 30s, so it writes no idle
// marker): the new process's router has read nothing and knows no
// event time nor when the sources went silent, so its idle markers carry
// no stamp (fb.idlefor, fb.seen). The window holding the last calls must
// still be judged during the pause, by the new process: its keyed stage
// measures the silence from the keyed topic's Kafka timestamps (the
// markers' minus the sources' last data records', the latter restored
// from the checkpoint or replayed). On main the watermark stayed at
// newest - lateness and the window was not judged until new traffic (the
// poll timed out). Order, not latency, is asserted; the delay is logged.
func TestLivePauseRouterRestartJudgesTheLastCalls(t *testing.T) {
	k := testharness.StartKafka(t)
	o := liveOpts{brokers: k.Brokers, suffix: ".pause-restart"}
	cfg := liveConfig(t, o)
	// The first process marks no source idle within the test (idle
	// timeout 30s): every marker of the pause is the second's.
	o.idle = 30 * time.Second
	cfgFirst := liveConfig(t, o)
	tenants := []string{"acme", "globex"}
	first := startRunWith(t, pipeline.Options{Config: cfgFirst, InsecureUnsigned: true})
	var last atomic.Int64
	clock := func() time.Time {
		now := time.Now()
		last.Store(now.UnixNano())
		return now
	}
	pub := startPublisherClock(t, k, tenants, clock)
	start := time.Now()
	// Until the first process has applied calls (it is routing live).
	if !testharness.Poll(30*time.Second, func() bool { return first.p.Keyed().Stats().Spans > 0 }) {
		t.Fatal("the first process applied no call in 30s")
	}
	time.Sleep(time.Until(start.Add(3 * time.Second)))
	pub.halt()
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := pub.cl.Flush(fctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if pub.errs.Load() > 0 {
		t.Fatalf("%d produce errors", pub.errs.Load())
	}
	lastCall := time.Unix(0, last.Load())
	sent := pub.sent.Load()
	// Stopped once it applied every call: the second process routes
	// nothing (a backlog routed after the restart would be seconds behind
	// the clock, and rightly not live).
	if !testharness.Poll(30*time.Second, func() bool { return first.p.Keyed().Stats().Spans == sent }) {
		t.Fatalf("the first process applied %d of the %d calls in 30s", first.p.Keyed().Stats().Spans, sent)
	}
	first.stop(t)
	stoppedAt := time.Now()

	log := &arrivalLog{}
	second := startRunWith(t, pipeline.Options{Config: cfg, InsecureUnsigned: true, ExtraSinks: []engine.Sink{log}})
	var vAt time.Time
	if !testharness.Poll(60*time.Second, func() bool {
		for _, tn := range tenants {
			v, ok := log.verdictAfter(tn, lastCall.UnixNano())
			if !ok {
				return false
			}
			vAt = latest(vAt, v)
		}
		return true
	}) {
		t.Fatalf("after the restart in the pause: no verdict of the window holding the last call (%s) in 60s; keyed watermarks %v, stats %+v",
			lastCall.Format(time.RFC3339Nano), second.p.Keyed().Partitions(), second.p.Keyed().Stats())
	}
	t.Logf("last call %s, process restarted %v after it: its window's verdict came %v after the restart",
		lastCall.Format("15:04:05.000"), stoppedAt.Sub(lastCall).Round(time.Millisecond), vAt.Sub(stoppedAt).Round(time.Millisecond))
	if st := second.p.Keyed().Stats(); st.LateSpans != 0 || st.IdleNotLive != 0 {
		t.Errorf("restarted process: %d late spans, %d idle markers refused as not live; want none", st.LateSpans, st.IdleNotLive)
	}
	second.stop(t)
}
