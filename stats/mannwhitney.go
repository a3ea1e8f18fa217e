package stats

import "math"

// MannWhitneyResult is a two-sided Mann–Whitney U test.
type MannWhitneyResult struct {
	// U is the statistic of x: the number of pairs (x_i, y_j) with
	// x_i > y_j, ties counting 1/2 (= R_x - n(n+1)/2 with mid-ranks R_x).
	// In [0, n*m]; n*m/2 under no shift.
	U float64
	// Z is the standardised statistic with tie and continuity corrections;
	// P its two-sided normal p-value, in [0, 1].
	Z, P float64
	N, M int
}

// MannWhitneyU is the two-sided Mann–Whitney U test of x against y with the
// normal approximation, matching scipy.stats.mannwhitneyu(x, y,
// alternative='two-sided', method='asymptotic', use_continuity=True):
//
//	z = (U - n*m/2 - 0.5*sign(U - n*m/2)) / s,
//	s^2 = n*m/12 * ((N+1) - sum(t^3 - t)/(N(N-1))),  N = n+m,
//
// t the sizes of the groups of tied values, p = 2*(1 - Phi(|z|)).
// Errors: an empty sample (ErrTooFewSamples), NaN (ErrInvalidInput), all
// N values tied (ErrDegenerate: s = 0).
func MannWhitneyU(x, y []float64) (MannWhitneyResult, error) {
	return MannWhitneyUSorted(sortedCopy(x), sortedCopy(y))
}

// MannWhitneyUSorted is MannWhitneyU for samples already sorted in
// ascending order (as slices.Sort leaves them: NaN first), without copying:
// one merge of the two, O(n+m), no allocation. Unsorted input gives wrong
// results, not an error.
func MannWhitneyUSorted(xs, ys []float64) (MannWhitneyResult, error) {
	n, m := len(xs), len(ys)
	if n == 0 || m == 0 {
		return MannWhitneyResult{}, errf(ErrTooFewSamples, "Mann–Whitney test needs two non-empty samples, got sizes %d and %d", n, m)
	}
	// Sorted, NaN sorts first: checking the first value of each is enough.
	if math.IsNaN(xs[0]) {
		return MannWhitneyResult{}, errf(ErrInvalidInput, "Mann–Whitney x has a NaN value")
	}
	if math.IsNaN(ys[0]) {
		return MannWhitneyResult{}, errf(ErrInvalidInput, "Mann–Whitney y has a NaN value")
	}
	// Walk the merged order one group of tied values at a time: a values
	// of x and b of y equal to v take positions pos..pos+a+b-1 and each
	// gets their mid-rank. Every term is a half-integer below 2^52, so the
	// sums are exact whatever the order of addition.
	var rx, tie float64
	pos, i, j := 0, 0, 0
	for i < n || j < m {
		var v float64
		switch {
		case j == m || (i < n && xs[i] <= ys[j]):
			v = xs[i]
		default:
			v = ys[j]
		}
		a, b := 0, 0
		for i < n && xs[i] == v {
			i++
			a++
		}
		for j < m && ys[j] == v {
			j++
			b++
		}
		t := a + b
		mid := float64(2*pos+t+1) / 2 // mid-rank of 1-based ranks pos+1..pos+t
		rx += float64(a) * mid
		ft := float64(t)
		tie += ft*ft*ft - ft
		pos += t
	}
	N := n + m
	fn, fm, fN := float64(n), float64(m), float64(N)
	u := rx - fn*(fn+1)/2
	s := math.Sqrt(fn * fm / 12 * ((fN + 1) - tie/(fN*(fN-1))))
	if !(s > 0) {
		return MannWhitneyResult{}, errf(ErrDegenerate, "Mann–Whitney test: all %d values are tied", N)
	}
	num := u - fn*fm/2
	switch {
	case num > 0:
		num -= 0.5
	case num < 0:
		num += 0.5
	}
	z := num / s
	p := clamp01(math.Erfc(math.Abs(z) / math.Sqrt2))
	return MannWhitneyResult{U: u, Z: z, P: p, N: n, M: m}, nil
}
