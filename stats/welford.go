package stats

import "math"

// Welford accumulates the count, mean and sum of squared deviations of a
// stream (Welford 1962), numerically stable and mergeable (Chan, Golub and
// LeVeque 1979), so per-partition accumulators can be combined. The zero
// value is empty and ready; the exported fields are its whole state (it
// serialises with any encoder).
type Welford struct {
	N    int64
	Mean float64 // in the unit of the data
	M2   float64 // sum of squared deviations from Mean, in unit^2
}

// Add includes x. A NaN or infinite x is ignored and reported false (so a
// bad value cannot poison the accumulator).
func (w *Welford) Add(x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	w.N++
	d := x - w.Mean
	w.Mean += d / float64(w.N)
	w.M2 += d * (x - w.Mean)
	return true
}

// Merge adds the observations summarised by o.
func (w *Welford) Merge(o Welford) {
	if o.N == 0 {
		return
	}
	if w.N == 0 {
		*w = o
		return
	}
	n := w.N + o.N
	d := o.Mean - w.Mean
	fa, fb, fn := float64(w.N), float64(o.N), float64(n)
	w.Mean += d * fb / fn
	w.M2 += o.M2 + d*d*fa*fb/fn
	w.N = n
}

// Variance returns the sample variance M2/(N-1) in unit^2; ok is false when
// N < 2.
func (w Welford) Variance() (v float64, ok bool) {
	if w.N < 2 {
		return 0, false
	}
	return max(w.M2, 0) / float64(w.N-1), true
}

// PopulationVariance returns M2/N; ok is false when N < 1.
func (w Welford) PopulationVariance() (v float64, ok bool) {
	if w.N < 1 {
		return 0, false
	}
	return max(w.M2, 0) / float64(w.N), true
}

// StdDev returns the square root of Variance; ok is false when N < 2.
func (w Welford) StdDev() (float64, bool) {
	v, ok := w.Variance()
	return math.Sqrt(v), ok
}
