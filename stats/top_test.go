package stats

import "slices"

// top is the k largest of a sample, sorted ascending: what
// TailEstimator.EstimateTop takes.
type top []float64

func (t top) Top() []float64 { return t }
func (t top) Len() int       { return len(t) }

// largest returns the k largest of values (all when k >= len), sorted.
func largest(values []float64, k int) top {
	s := slices.Sorted(slices.Values(values))
	return top(s[max(0, len(s)-k):])
}
