package stats

import "math"

// Entropy returns the Shannon entropy, in bits, of a distribution given by
// non-negative category counts (or weights), zeros ignored:
//
//	H = -sum_i p_i*log2(p_i),  p_i = c_i / sum(c),
//
// and the normalised entropy H/log2(k), k the number of non-empty
// categories: 1 for an even mix, near 0 for a mix dominated by one
// category, and 0 by definition when k < 2. Errors: a negative, NaN or
// infinite count (ErrInvalidInput), no positive count (ErrTooFewSamples).
func Entropy(counts []float64) (bits, normalized float64, err error) {
	total := 0.0
	k := 0
	for i, c := range counts {
		if !(c >= 0) || math.IsInf(c, 0) {
			return 0, 0, errf(ErrInvalidInput, "count[%d]=%v: must be finite and >= 0", i, c)
		}
		if c > 0 {
			total += c
			k++
		}
	}
	if k == 0 {
		return 0, 0, errf(ErrTooFewSamples, "entropy of %d categories with no positive count", len(counts))
	}
	if k == 1 {
		return 0, 0, nil
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := c / total
			h -= p * math.Log2(p)
		}
	}
	h = max(h, 0)
	return h, min(h/math.Log2(float64(k)), 1), nil
}
