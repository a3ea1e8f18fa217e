package engine_test

import (
	"math"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/ingest/batch"
	"github.com/fusebox-dev/fusebox/schemas"
)

// keyedFeed drives a worker (workerConfig: allowed lateness 5s, minute
// rollups) with keyed records as they come off the keyed topic — headers,
// value and Kafka timestamp through engine.KeyedDecoder — over two source
// partitions whose event time follows the wall clock (lag behind it).
type keyedFeed struct {
	t    *testing.T
	w    *engine.Worker
	off  int64
	src  [2]int64
	seq  uint64
	base int64 // a minute boundary
}

func newKeyedFeed(t *testing.T, cfg engine.WorkerConfig) *keyedFeed {
	t.Helper()
	w, err := engine.NewWorker(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &keyedFeed{t: t, w: w, base: 1_700_000_040e9}
}

func (f *keyedFeed) apply(h schemas.KeyedHeaders, value []byte, ts int64) {
	f.t.Helper()
	h.SourceTopics = "s:2"
	out := batch.Record{Topic: "keyed", Offset: f.off, Timestamp: time.Unix(0, ts)}
	if err := engine.KeyedDecoder.Decode(f.off, schemas.AppendKeyedHeaders(nil, h), value, &out); err != nil {
		f.t.Fatal(err)
	}
	f.off++
	f.w.Apply(out.Payload.(*engine.KeyedRecord))
}

// span writes a record of source part with a span ending at base+at,
// routed at base+at+lag (wall clock).
func (f *keyedFeed) span(part int32, at, lag time.Duration) {
	end := f.base + int64(at)
	f.seq++
	s := schemas.Span{Key: schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "v"},
		StartUnixNano: end - 1e6, EndUnixNano: end, DurationMs: 1}
	s.TraceID[0], s.SpanID[0], s.SpanID[1] = 2, byte(f.seq), byte(f.seq>>8)
	f.src[part]++
	f.apply(schemas.KeyedHeaders{Source: engine.SourceRef{Topic: "s", Partition: part, Offset: f.src[part]}, SourceMaxEventTime: end},
		schemas.AppendKeyedBatch(nil, []schemas.Span{s}, nil), end+int64(lag))
}

// oldRouterIdle is the idle marker the router that routed the traffic
// writes at wall clock base+at: stamped with the silence since its last
// valid event (newest, seen at newest+lag).
func (f *keyedFeed) oldRouterIdle(part int32, newest, lag, at time.Duration) {
	seen := f.base + int64(newest+lag)
	f.apply(schemas.KeyedHeaders{Source: engine.SourceRef{Topic: "s", Partition: part, Offset: f.src[part]},
		SourceMaxEventTime: f.base + int64(newest), Idle: true, IdleForNanos: f.base + int64(at) - seen, SeenAtUnixNano: seen}, nil, f.base+int64(at))
}

// restartedRouterIdle is the idle marker a router restarted during the
// pause writes at wall clock base+at: it has read nothing since its start,
// so it knows no event time of the source and no silence (no fb.idlefor,
// no fb.seen, no fb.srcmax).
func (f *keyedFeed) restartedRouterIdle(part int32, at time.Duration) {
	f.apply(schemas.KeyedHeaders{Source: engine.SourceRef{Topic: "s", Partition: part, Offset: f.src[part]},
		SourceMaxEventTime: math.MinInt64, Idle: true}, nil, f.base+int64(at))
}

func (f *keyedFeed) wantWatermark(want time.Duration, why string) {
	f.t.Helper()
	if got := time.Duration(f.w.Stats().Watermark - f.base); got != want {
		f.t.Fatalf("%s: watermark base%+v, want base%+v", why, got, want)
	}
}

func (f *keyedFeed) rollupOfFirstMinute() (int64, bool) {
	for _, r := range f.w.TakeOutput().Rollups {
		if r.MinuteUnixNano == f.base && r.N > 0 {
			return r.N, true
		}
	}
	return 0, false
}

// TestAllIdleAdvanceSurvivesARouterRestart: both sources send calls up to
// 40s into a minute (routed 200ms after their event time), then pause; the
// router marks them idle at +42s (silent 1.8s), and is then restarted (a
// deploy, a rebalance): the new router's markers carry no stamp. The
// watermark must go on advancing with the markers' Kafka timestamps — the
// silence measured from the sources' last data records in the keyed topic
// — and close the minute holding the last calls once the pause is long
// enough: min_s(E_s + (marker time - last data time)) - lateness. On main
// it froze at the old router's last stamp (42s - 0.2s - 5s = 36.8s) and
// the minute stayed open until new traffic.
func TestAllIdleAdvanceSurvivesARouterRestart(t *testing.T) {
	const lag = 200 * time.Millisecond
	f := newKeyedFeed(t, workerConfig(t))
	for i := 0; i <= 40; i++ {
		f.span(0, time.Duration(i)*time.Second, lag)
		f.span(1, time.Duration(i)*time.Second, lag)
	}
	f.oldRouterIdle(0, 40*time.Second, lag, 42*time.Second)
	f.oldRouterIdle(1, 40*time.Second, lag, 42*time.Second)
	// E + (42s - 40.2s) - 5s.
	f.wantWatermark(36800*time.Millisecond, "all idle, old router's markers")
	// The router restarts: markers without a stamp, 20s and then 30s
	// into the pause (wall clock +60s, +70.2s).
	f.restartedRouterIdle(0, 60*time.Second)
	f.restartedRouterIdle(1, 60*time.Second)
	f.wantWatermark(40*time.Second+(60*time.Second-40*time.Second-lag)-5*time.Second, "restarted router, +60s")
	if _, ok := f.rollupOfFirstMinute(); ok {
		t.Fatal("the minute closed at a watermark of base+54.8s")
	}
	f.restartedRouterIdle(0, 70*time.Second+lag)
	f.restartedRouterIdle(1, 70*time.Second+lag)
	f.wantWatermark(65*time.Second, "restarted router, +70.2s")
	if n, ok := f.rollupOfFirstMinute(); !ok || n != 82 {
		t.Fatalf("rollup of the minute holding the last calls: %d calls (emitted %v), want 82", n, ok)
	}
	// A call of the pause within the lateness of the clock still counts:
	// routed at +70.4s with event time +65.4s (5s behind the clock).
	before := f.w.Stats()
	f.span(1, 65400*time.Millisecond, 5*time.Second)
	if st := f.w.Stats(); st.Spans != before.Spans+1 || st.LateSpans != before.LateSpans {
		t.Fatalf("a call 5s behind the clock after the pause: %d counted, %d late; want counted", st.Spans-before.Spans, st.LateSpans-before.LateSpans)
	}
}

// TestAllIdleRestartedRouterKeepsBackfillsOut: the "live sources only"
// rule holds with the Kafka timestamps too: a source whose last data
// record was routed more than the live lag (here the lateness, 5s, the
// default) after its newest event time is a backfill, and a restarted
// router's markers do not advance it; the refusal is counted
// (WorkerStats.IdleNotLive). With WorkerConfig.LiveLag above its lag (an
// export delay of 8s, beyond the lateness) it is live again.
func TestAllIdleRestartedRouterKeepsBackfillsOut(t *testing.T) {
	for _, tc := range []struct {
		liveLag time.Duration
		want    time.Duration
		refused int64
	}{
		{0, 40*time.Second - 5*time.Second, 2},
		{8 * time.Second, 40*time.Second + (71*time.Second - 48*time.Second) - 5*time.Second, 0},
	} {
		cfg := workerConfig(t)
		cfg.LiveLag = tc.liveLag
		f := newKeyedFeed(t, cfg)
		for i := 0; i <= 40; i++ {
			f.span(0, time.Duration(i)*time.Second, 200*time.Millisecond)
			f.span(1, time.Duration(i)*time.Second, 8*time.Second) // source 1: 8s behind the clock
		}
		f.restartedRouterIdle(0, 70*time.Second)
		f.restartedRouterIdle(1, 70*time.Second)
		f.restartedRouterIdle(1, 71*time.Second)
		f.wantWatermark(tc.want, "live lag "+tc.liveLag.String())
		if got := f.w.Stats().IdleNotLive; got != tc.refused {
			t.Fatalf("live lag %v: %d markers refused as not live, want %d", tc.liveLag, got, tc.refused)
		}
	}
}

// TestAllIdleRouterRestartAcrossACheckpoint: the last data timestamps are
// in the checkpoint (format 6): a worker restored during the pause
// advances on the restarted router's markers exactly as the one that went
// on.
func TestAllIdleRouterRestartAcrossACheckpoint(t *testing.T) {
	const lag = 200 * time.Millisecond
	a := newKeyedFeed(t, workerConfig(t))
	for i := 0; i <= 40; i++ {
		a.span(0, time.Duration(i)*time.Second, lag)
		a.span(1, time.Duration(i)*time.Second, lag)
	}
	a.w.TakeOutput()
	snap, err := a.w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := engine.RestoreWorker(workerConfig(t), 0, snap)
	if err != nil {
		t.Fatal(err)
	}
	b := &keyedFeed{t: t, w: r, off: a.off, src: a.src, seq: a.seq, base: a.base}
	for _, x := range []*keyedFeed{a, b} {
		x.restartedRouterIdle(0, 70*time.Second+lag)
		x.restartedRouterIdle(1, 70*time.Second+lag)
		x.wantWatermark(65*time.Second, "restarted router, +70.2s")
	}
	ga, gb := a.w.TakeOutput(), b.w.TakeOutput()
	if len(ga.Rollups) == 0 || len(ga.Rollups) != len(gb.Rollups) {
		t.Fatalf("restored worker: %d rollups, want the uninterrupted one's %d (non-zero)", len(gb.Rollups), len(ga.Rollups))
	}
}
