package proctest

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Event is one input record at its event time: a span or a correction.
type Event struct {
	T          int64 // event time, Unix ns (a span's end)
	Span       *schemas.Span
	Correction *schemas.Correction
}

// SpanEvents wraps spans as events (pointing into spans).
func SpanEvents(spans []schemas.Span) []Event {
	out := make([]Event, len(spans))
	for i := range spans {
		out[i] = Event{T: spans[i].EndUnixNano, Span: &spans[i]}
	}
	return out
}

// ObserveAll observes the spans of each list in order (each under its own
// Key), evaluating nothing.
func ObserveAll(p processors.Processor, lists ...[]schemas.Span) {
	for _, spans := range lists {
		for i := range spans {
			p.ObserveSpan(spans[i].Key, &spans[i])
		}
	}
}

func observe(p processors.Processor, e Event) {
	if e.Span != nil {
		p.ObserveSpan(e.Span.Key, e.Span)
	} else {
		p.ObserveCorrection(e.Correction)
	}
}

// feed is the engine's loop in miniature: for each boundary b = from+every,
// from+2·every, ... up to to (every = p.Interval()), it observes the
// records, in order, while they are before b, then calls Evaluate(b). It
// returns the number of records observed: those from the first one at or
// after the last boundary on are left.
func feed(p processors.Processor, n int, at func(int) int64, obs func(int), from, to int64, out processors.Emitter) int {
	every := int64(p.Interval())
	i := 0
	for b := from + every; b <= to; b += every {
		for i < n && at(i) < b {
			obs(i)
			i++
		}
		p.Evaluate(b, out)
	}
	return i
}

// Feed runs feed over spans (sorted by end time, or shuffled only within
// intervals of p.Interval()) and returns the index of the first span not
// observed.
func Feed(p processors.Processor, spans []schemas.Span, from, to int64, out processors.Emitter) int {
	return feed(p, len(spans), func(i int) int64 { return spans[i].EndUnixNano },
		func(i int) { p.ObserveSpan(spans[i].Key, &spans[i]) }, from, to, out)
}

// FeedEvents is Feed for events.
func FeedEvents(p processors.Processor, evs []Event, from, to int64, out processors.Emitter) int {
	return feed(p, len(evs), func(i int) int64 { return evs[i].T }, func(i int) { observe(p, evs[i]) }, from, to, out)
}

// Drive feeds spans to p, evaluating every boundary in (from, to], then
// observes the spans at or after to (state for a snapshot), and returns the
// verdicts after checking that each is valid.
func Drive(t testing.TB, p processors.Processor, spans []schemas.Span, from, to int64) []schemas.Verdict {
	t.Helper()
	return DriveEvents(t, p, SpanEvents(spans), from, to)
}

// DriveEvents is Drive for events.
func DriveEvents(t testing.TB, p processors.Processor, evs []Event, from, to int64) []schemas.Verdict {
	t.Helper()
	var out Collector
	for _, e := range evs[FeedEvents(p, evs, from, to, &out):] {
		observe(p, e)
	}
	ValidateAll(t, out.Verdicts)
	return out.Verdicts
}

// Replay feeds spans[i:] to p boundary by boundary from first (0: the
// boundary after spans[0]'s end) until every span is observed and the
// boundary after the last one evaluated, or until boundary stop (when not
// 0) is evaluated, whichever comes first. It returns the index of the first
// span not observed, for a later Replay to continue from.
func Replay(p processors.Processor, spans []schemas.Span, i int, first, stop int64, out processors.Emitter) int {
	every := int64(p.Interval())
	if first == 0 {
		first = (spans[0].EndUnixNano/every + 1) * every
	}
	last := first // the first boundary after every span
	for _, s := range spans[i:] {
		if s.EndUnixNano >= last {
			last = first + ((s.EndUnixNano-first)/every+1)*every
		}
	}
	if stop != 0 && stop < last {
		last = stop
	}
	return i + Feed(p, spans[i:], first-every, last, out)
}

// ReplayAll replays every span (Replay from the boundary after the first
// span to the one after the last) into a fresh processor p and returns the
// verdicts after checking that each is valid.
func ReplayAll(t testing.TB, p processors.Processor, spans []schemas.Span) []schemas.Verdict {
	t.Helper()
	var out Collector
	Replay(p, spans, 0, 0, 0, &out)
	ValidateAll(t, out.Verdicts)
	return out.Verdicts
}

// Bounds is the span of boundaries Replay covers for spans sorted by end
// time: from the boundary at or before the first span's end (exclusive, as
// Drive's from) to the first boundary after the last span's end.
func Bounds(spans []schemas.Span, every int64) (from, to int64) {
	return processors.FloorTo(spans[0].EndUnixNano, every), processors.FloorTo(spans[len(spans)-1].EndUnixNano, every) + every
}
