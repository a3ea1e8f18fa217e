package observe

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// DefaultLatencyBuckets are the upper bounds, in seconds, of
// fusebox_processing_latency_seconds: 1 ms to 30 s, about three per decade.
var DefaultLatencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// HistogramSnapshot is a histogram's state at one moment.
type HistogramSnapshot struct {
	// UpperBounds are the buckets' inclusive upper bounds, ascending,
	// without +Inf.
	UpperBounds []float64
	// Counts has one count per bucket (not cumulative), plus a last one for
	// the observations above the largest bound: len(UpperBounds)+1.
	Counts []uint64
	// Sum is the sum of all observations.
	Sum float64
}

// Count is the number of observations.
func (h *HistogramSnapshot) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// merge adds o to h; both must have the same bounds.
func (h *HistogramSnapshot) merge(o *HistogramSnapshot) error {
	if !slices.Equal(h.UpperBounds, o.UpperBounds) {
		return fmt.Errorf("histograms with different buckets %v and %v cannot be added", h.UpperBounds, o.UpperBounds)
	}
	if len(o.Counts) != len(o.UpperBounds)+1 {
		return fmt.Errorf("histogram has %d counts for %d bounds, want bounds+1", len(o.Counts), len(o.UpperBounds))
	}
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	h.Sum += o.Sum
	return nil
}

// clone returns a deep copy.
func (h *HistogramSnapshot) clone() *HistogramSnapshot {
	return &HistogramSnapshot{UpperBounds: slices.Clone(h.UpperBounds), Counts: slices.Clone(h.Counts), Sum: h.Sum}
}

// Histogram counts observations (seconds) into fixed buckets without locks,
// for a Source to report as ProcessingLatency. The zero value is not usable:
// make one with NewHistogram.
type Histogram struct {
	bounds  []float64
	counts  []atomic.Uint64 // len(bounds)+1
	sumBits atomic.Uint64   // float64 bits of the sum
}

// ErrBuckets is wrapped by NewHistogram's error when the bounds are unusable.
var ErrBuckets = errors.New("observe: bad histogram buckets")

// NewHistogram returns a histogram with the given upper bounds (seconds),
// which must be finite and strictly ascending; nil or empty means
// DefaultLatencyBuckets.
func NewHistogram(bounds []float64) (*Histogram, error) {
	if len(bounds) == 0 {
		bounds = DefaultLatencyBuckets
	}
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("%w: bound %d is %v, want a finite number", ErrBuckets, i, b)
		}
		if i > 0 && b <= bounds[i-1] {
			return nil, fmt.Errorf("%w: bound %d (%v) is not above bound %d (%v)", ErrBuckets, i, b, i-1, bounds[i-1])
		}
	}
	return &Histogram{bounds: slices.Clone(bounds), counts: make([]atomic.Uint64, len(bounds)+1)}, nil
}

// Observe records one observation of v seconds. NaN is ignored: it is no
// duration.
func (h *Histogram) Observe(v float64) {
	if math.IsNaN(v) {
		return
	}
	i, _ := slices.BinarySearch(h.bounds, v) // first bound >= v: upper bounds are inclusive
	h.counts[i].Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// ObserveDuration records d in seconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }

// Snapshot returns the counts so far. Observations that race with it may be
// in the counts and not yet in the sum, or the reverse; each is in both by
// the next snapshot.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{UpperBounds: slices.Clone(h.bounds), Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	s.Sum = math.Float64frombits(h.sumBits.Load())
	return s
}
