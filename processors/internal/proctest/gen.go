package proctest

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Time units in Unix ns, and T0, 2026-01-01T00:00:00Z: the start of the
// generated streams (a round hour).
const (
	Second = int64(time.Second)
	Minute = int64(time.Minute)
	Hour   = int64(time.Hour)
	T0     = int64(1767225600) * Second
)

// Lognormal draws exp(N(log(median), sigma)).
func Lognormal(r *rand.Rand, median, sigma float64) float64 {
	return median * math.Exp(sigma*r.NormFloat64())
}

// FillRandom sets every byte of b from r.
func FillRandom(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// NewSpan makes a span of key with fresh random trace and span ids (drawn
// from r, trace id first) ending at end and lasting durMs.
func NewSpan(r *rand.Rand, key schemas.Key, route string, end int64, durMs float64) schemas.Span {
	var s schemas.Span
	FillRandom(r, s.TraceID[:])
	FillRandom(r, s.SpanID[:])
	s.Key = key
	s.Route = route
	s.EndUnixNano = end
	s.StartUnixNano = end - int64(durMs*1e6)
	s.DurationMs = durMs
	return s
}

// SortByEnd sorts spans by end time, keeping the order of equal ones.
func SortByEnd(spans []schemas.Span) {
	slices.SortStableFunc(spans, func(a, b schemas.Span) int { return cmp.Compare(a.EndUnixNano, b.EndUnixNano) })
}

// SortEvents sorts events by time, keeping the order of equal ones.
func SortEvents(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int { return cmp.Compare(a.T, b.T) })
}

// ShuffleWithinSlots returns a copy of spans (sorted by end time) permuted
// inside each interval of width every, intervals kept in order: the arrival
// orders the engine may produce.
func ShuffleWithinSlots(spans []schemas.Span, every int64, r *rand.Rand) []schemas.Span {
	out := slices.Clone(spans)
	shuffleRuns(out, func(i int) int64 { return processors.FloorTo(out[i].EndUnixNano, every) }, r)
	return out
}

// ShuffleEventsWithinSlots is ShuffleWithinSlots for events.
func ShuffleEventsWithinSlots(evs []Event, every int64, r *rand.Rand) []Event {
	out := slices.Clone(evs)
	shuffleRuns(out, func(i int) int64 { return processors.FloorTo(out[i].T, every) }, r)
	return out
}

// shuffleRuns shuffles each run of consecutive elements with the same slot.
func shuffleRuns[T any](xs []T, slot func(int) int64, r *rand.Rand) {
	for i := 0; i < len(xs); {
		j := i
		for j < len(xs) && slot(j) == slot(i) {
			j++
		}
		part := xs[i:j]
		r.Shuffle(len(part), func(a, b int) { part[a], part[b] = part[b], part[a] })
		i = j
	}
}
