package observe

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	h, err := NewHistogram([]float64{0.1, 1, 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{0, 0.1, 0.100001, 1, 9.99, 10, 11, math.Inf(1), math.NaN()} {
		h.Observe(v)
	}
	h.ObserveDuration(250 * time.Millisecond)
	s := h.Snapshot()
	// Upper bounds are inclusive (le); +Inf goes to the overflow bucket;
	// NaN is no duration and is ignored.
	if want := []uint64{2, 3, 2, 2}; !slices.Equal(s.Counts, want) {
		t.Errorf("counts %v, want %v", s.Counts, want)
	}
	if s.Count() != 9 {
		t.Errorf("count %d, want 9", s.Count())
	}
	if !math.IsInf(s.Sum, 1) {
		t.Errorf("sum %v, want +Inf (an +Inf observation)", s.Sum)
	}
}

func TestHistogramConcurrentObserve(t *testing.T) {
	h, _ := NewHistogram(nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				h.Observe(0.002)
			}
		}()
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count() != 8000 || math.Abs(s.Sum-16) > 1e-9 {
		t.Errorf("count %d sum %v, want 8000 and 16", s.Count(), s.Sum)
	}
	if !slices.Equal(s.UpperBounds, DefaultLatencyBuckets) {
		t.Errorf("bounds %v, want the defaults", s.UpperBounds)
	}
}

func TestNewHistogramRejectsBadBounds(t *testing.T) {
	for _, b := range [][]float64{{1, 1}, {2, 1}, {1, math.NaN()}, {math.Inf(1)}} {
		if _, err := NewHistogram(b); !errors.Is(err, ErrBuckets) {
			t.Errorf("NewHistogram(%v): %v, want ErrBuckets", b, err)
		}
	}
}

func TestAddProcessingLatencyMerges(t *testing.T) {
	var s Snapshot
	s.AddProcessingLatency(HistogramSnapshot{UpperBounds: []float64{1}, Counts: []uint64{1, 2}, Sum: 5})
	s.AddProcessingLatency(HistogramSnapshot{UpperBounds: []float64{1}, Counts: []uint64{3, 0}, Sum: 1})
	if !slices.Equal(s.ProcessingLatency.Counts, []uint64{4, 2}) || s.ProcessingLatency.Sum != 6 || len(s.errs) != 0 {
		t.Errorf("merged %+v errs %v", s.ProcessingLatency, s.errs)
	}
	s.AddProcessingLatency(HistogramSnapshot{UpperBounds: []float64{2}, Counts: []uint64{1, 0}})
	s.AddProcessingLatency(HistogramSnapshot{UpperBounds: []float64{1}, Counts: []uint64{1}})
	if len(s.errs) != 2 || !slices.Equal(s.ProcessingLatency.Counts, []uint64{4, 2}) {
		t.Errorf("mismatched histograms: errs %v, counts %v; want 2 errors and the counts unchanged", s.errs, s.ProcessingLatency.Counts)
	}
}
