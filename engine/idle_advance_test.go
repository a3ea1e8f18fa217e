package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/schemas"
)

// idleAdvance drives a worker (workerConfig: allowed lateness 5s, minute
// rollups) over two source partitions, as the router writes them.
type idleAdvance struct {
	t    *testing.T
	w    *engine.Worker
	off  int64
	src  [2]int64
	seq  uint64
	base int64 // a minute boundary
}

func newIdleAdvance(t *testing.T) *idleAdvance {
	t.Helper()
	w, err := engine.NewWorker(workerConfig(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	return &idleAdvance{t: t, w: w, base: 1_700_000_040e9}
}

// span applies one record of source part with a span ending at base+at.
func (a *idleAdvance) span(part int32, at time.Duration) {
	end := a.base + int64(at)
	a.seq++
	s := schemas.Span{Key: schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "v"},
		StartUnixNano: end - 1e6, EndUnixNano: end, DurationMs: 1}
	s.TraceID[0], s.SpanID[0], s.SpanID[1] = 1, byte(a.seq), byte(a.seq>>8)
	a.src[part]++
	a.apply(&engine.KeyedRecord{Source: engine.SourceRef{Topic: "s", Partition: part, Offset: a.src[part]},
		SourceMaxEventTime: end, Spans: []schemas.Span{s}}) // ascending times: end is the source's newest
}

// idle applies an idle marker of a live source part whose newest event is
// at base+newest, came when the wall clock said so too, and the source
// silent for idleFor since.
func (a *idleAdvance) idle(part int32, newest, idleFor time.Duration) {
	a.idleLag(part, newest, idleFor, 0)
}

// idleLag is idle for a source whose newest event came lag behind the
// wall clock.
func (a *idleAdvance) idleLag(part int32, newest, idleFor, lag time.Duration) {
	a.apply(&engine.KeyedRecord{Source: engine.SourceRef{Topic: "s", Partition: part, Offset: a.src[part]},
		SourceMaxEventTime: a.base + int64(newest), Idle: true, IdleFor: int64(idleFor), SeenAt: a.base + int64(newest+lag)})
}

func (a *idleAdvance) apply(r *engine.KeyedRecord) {
	r.Offset, r.SourceTopics = a.off, "s:2"
	a.off++
	a.w.Apply(r)
}

// watermark is the worker's watermark relative to base.
func (a *idleAdvance) watermark() time.Duration {
	return time.Duration(a.w.Stats().Watermark - a.base)
}

func (a *idleAdvance) wantWatermark(want time.Duration, why string) {
	a.t.Helper()
	if got := a.watermark(); got != want {
		a.t.Fatalf("%s: watermark base%+v, want base%+v", why, got, want)
	}
}

// rollupOfFirstMinute returns the calls of the rollup of the minute
// starting at base, and whether the worker emitted it since the last call.
func (a *idleAdvance) rollupOfFirstMinute() (n int64, ok bool) {
	for _, r := range a.w.TakeOutput().Rollups {
		if r.MinuteUnixNano == a.base && r.N > 0 {
			return r.N, true
		}
	}
	return 0, false
}

// TestAllIdleWatermarkAdvancesWithTheIdleDuration: both sources send calls
// up to 40s into a minute, then pause. Idle markers without an idle
// duration (an older router, or the first moment) leave the watermark at
// the newest event minus the lateness, and the minute holding the last
// calls stays open: that is all main did. Markers stamped with how long
// the sources have been silent move it to
// max(newest, min_s(E_s + D_s)) - lateness, which closes the minute once
// the pause is long enough, and never beyond a source's E_s + D_s -
// lateness.
func TestAllIdleWatermarkAdvancesWithTheIdleDuration(t *testing.T) {
	a := newIdleAdvance(t)
	for i := 0; i <= 40; i++ {
		a.span(0, time.Duration(i)*time.Second)
		if i <= 38 {
			a.span(1, time.Duration(i)*time.Second)
		}
	}
	a.wantWatermark(38*time.Second-5*time.Second, "both sources live")
	a.idle(0, 40*time.Second, 0)
	a.idle(1, 38*time.Second, 0)
	a.wantWatermark(40*time.Second-5*time.Second, "all idle, no idle duration")
	if _, ok := a.rollupOfFirstMinute(); ok {
		t.Fatal("the minute closed with the watermark inside it")
	}
	// 20s of silence on source 0 only: source 1's E+D (38s+0) bounds the
	// advance, so nothing moves.
	a.idle(0, 40*time.Second, 20*time.Second)
	a.wantWatermark(35*time.Second, "source 1 not stamped yet")
	// Both stamped: min(40+20, 38+20) - 5 = 53s.
	a.idle(1, 38*time.Second, 20*time.Second)
	a.wantWatermark(53*time.Second, "both silent for 20s")
	if _, ok := a.rollupOfFirstMinute(); ok {
		t.Fatal("the minute closed at a watermark of base+53s")
	}
	// 30s of silence: min(70, 68) - 5 = 63s: the minute holding the last
	// calls closes, and its rollup has every call.
	a.idle(0, 40*time.Second, 30*time.Second)
	a.idle(1, 38*time.Second, 30*time.Second)
	a.wantWatermark(63*time.Second, "both silent for 30s")
	if n, ok := a.rollupOfFirstMinute(); !ok || n != 41+39 {
		t.Fatalf("rollup of the minute holding the last calls: %d calls (emitted %v), want 80", n, ok)
	}
}

// TestAllIdleBackfillDoesNotAdvance: a source whose newest event came more
// than the allowed lateness (5s) behind the wall clock is a backfill or a
// replay: its next records go on from where it stopped, so its silence
// does not move the watermark (within the lateness of the clock, it does).
func TestAllIdleBackfillDoesNotAdvance(t *testing.T) {
	for _, tc := range []struct {
		lag  time.Duration
		want time.Duration
	}{
		{5 * time.Second, 40*time.Second + 20*time.Second - 5*time.Second},
		{5*time.Second + time.Millisecond, 40*time.Second - 5*time.Second},
		{time.Hour, 40*time.Second - 5*time.Second},
	} {
		a := newIdleAdvance(t)
		for i := 0; i <= 40; i++ {
			a.span(0, time.Duration(i)*time.Second)
			a.span(1, time.Duration(i)*time.Second)
		}
		a.idle(0, 40*time.Second, 20*time.Second)
		a.idleLag(1, 40*time.Second, 20*time.Second, tc.lag)
		a.wantWatermark(tc.want, fmt.Sprintf("source 1 %v behind the wall clock", tc.lag))
	}
}

// TestAllIdleAdvanceKeepsRecordsWithinTheLateness: a record that reaches
// the router during the pause counts when its event time is at least
// E_s + D - lateness (D: how long its source had been silent at the last
// marker before it), and is late below: the advance makes late only what
// the allowed lateness would anyway.
func TestAllIdleAdvanceKeepsRecordsWithinTheLateness(t *testing.T) {
	for _, tc := range []struct {
		at   time.Duration
		late bool
	}{
		{40*time.Second + 20*time.Second - 5*time.Second, false}, // exactly E + D - L
		{40*time.Second + 25*time.Second, false},                 // live: E + D and then some
		{40*time.Second + 20*time.Second - 5*time.Second - time.Millisecond, true},
	} {
		t.Run(fmt.Sprint(tc.at), func(t *testing.T) {
			a := newIdleAdvance(t)
			for i := 0; i <= 40; i++ {
				a.span(0, time.Duration(i)*time.Second)
				a.span(1, time.Duration(i)*time.Second)
			}
			a.idle(0, 40*time.Second, 20*time.Second)
			a.idle(1, 40*time.Second, 20*time.Second)
			a.wantWatermark(55*time.Second, "both silent for 20s")
			before := a.w.Stats()
			a.span(1, tc.at)
			st := a.w.Stats()
			if late := st.LateSpans > before.LateSpans; late != tc.late {
				t.Fatalf("span at base%+v after a 20s pause (watermark base+55s): late %v, want %v", tc.at, late, tc.late)
			}
			if !tc.late && st.Spans != before.Spans+1 {
				t.Fatalf("span at base%+v not counted: %d spans, want %d", tc.at, st.Spans, before.Spans+1)
			}
			// Back from the pause: source 0 is woken and holds the
			// watermark at its own newest again; it never goes back.
			a.wantWatermark(55*time.Second, "after the return")
		})
	}
}

// TestAllIdleAdvanceSurvivesARestart: the idle durations are in the
// checkpoint (format version 5): a worker restored between two markers
// advances exactly as the one that went on. Restored with them lost, the
// next marker of one source would not move the watermark.
func TestAllIdleAdvanceSurvivesARestart(t *testing.T) {
	feed := func(a *idleAdvance) {
		for i := 0; i <= 40; i++ {
			a.span(0, time.Duration(i)*time.Second)
			a.span(1, time.Duration(i/2)*time.Second)
		}
		a.idle(0, 40*time.Second, 20*time.Second)
		a.idle(1, 20*time.Second, 30*time.Second)
	}
	a := newIdleAdvance(t)
	feed(a)
	a.wantWatermark(55*time.Second-10*time.Second, "min(40+20, 20+30) - 5") // 45s
	a.w.TakeOutput()
	snap, err := a.w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := engine.RestoreWorker(workerConfig(t), 0, snap)
	if err != nil {
		t.Fatal(err)
	}
	b := &idleAdvance{t: t, w: r, off: a.off, src: a.src, seq: a.seq, base: a.base}
	// Source 0 silent 40s: min(40+40, 20+30) - 5 = 45s, unchanged; then
	// source 1 silent 45s: min(80, 65) - 5 = 60s, past the minute.
	for _, x := range []*idleAdvance{a, b} {
		x.idle(0, 40*time.Second, 40*time.Second)
		x.wantWatermark(45*time.Second, "source 0 silent 40s")
		x.idle(1, 20*time.Second, 45*time.Second)
		x.wantWatermark(60*time.Second, "source 1 silent 45s")
	}
	ga, gb := a.w.TakeOutput(), b.w.TakeOutput()
	if len(ga.Rollups) == 0 || fmt.Sprint(ga.Verdicts, ga.Rollups) != fmt.Sprint(gb.Verdicts, gb.Rollups) {
		t.Fatalf("restored worker: %d verdicts %d rollups, want the uninterrupted one's %d and %d (non-zero), identical",
			len(gb.Verdicts), len(gb.Rollups), len(ga.Verdicts), len(ga.Rollups))
	}
	// A restored worker whose idle durations were lost (a version-4
	// checkpoint) would stay at 45s after source 0's marker of 40s and
	// reach 60s only from source 1's; the source-1-first order shows the
	// durations were kept: source 1 silent 45s alone moves it only if
	// source 0's 20s was kept (min(60, 65) - 5 = 55s).
	c := newIdleAdvance(t)
	feed(c)
	c.w.TakeOutput()
	snap, err = c.w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, _, err = engine.RestoreWorker(workerConfig(t), 0, snap)
	if err != nil {
		t.Fatal(err)
	}
	d := &idleAdvance{t: t, w: r, off: c.off, src: c.src, seq: c.seq, base: c.base}
	d.idle(1, 20*time.Second, 45*time.Second)
	d.wantWatermark(55*time.Second, "restored, source 1 silent 45s, source 0's 20s kept")
}
