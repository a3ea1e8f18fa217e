package stats

import (
	"math"
	"slices"
)

// HypergeomUpperTail returns P[X >= k] for X ~ Hypergeometric(N, K, n): n
// items drawn without replacement from N, of which K are marked. It is the
// p-value of the one-sided Fisher exact test that the marked items
// concentrate in the draw (scipy.stats.hypergeom.sf(k-1, N, K, n), or
// scipy.stats.fisher_exact of [[k, n-k], [K-k, N-K-n+k]] with
// alternative='greater'):
//
//	P[X >= k] = sum_{i=k}^{min(n,K)} C(K,i) C(N-K,n-i) / C(N,n)
//
// summed in log space (lgamma) from the largest term down, so it is
// accurate to ~1e-12 relative for the N of a deployment's keys (up to
// millions) and never under- or overflows to NaN. Edge cases: k <=
// max(0, n+K-N) (every possible draw has k or more): 1; k > min(n, K): 0.
// Errors: N < 0, K or n outside [0, N] (ErrInvalidInput).
func HypergeomUpperTail(k, N, K, n int64) (float64, error) {
	if N < 0 || K < 0 || K > N || n < 0 || n > N {
		return 0, errf(ErrInvalidInput, "hypergeometric tail of %d in N=%d, K=%d, n=%d: need 0 <= K, n <= N", k, N, K, n)
	}
	lo, hi := max(0, n+K-N), min(n, K)
	if k <= lo {
		return 1, nil
	}
	if k > hi {
		return 0, nil
	}
	logC := func(a, b int64) float64 {
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	den := logC(N, n)
	terms := make([]float64, 0, hi-k+1)
	for i := k; i <= hi; i++ {
		terms = append(terms, logC(K, i)+logC(N-K, n-i)-den)
	}
	top := slices.Max(terms)
	s := 0.0
	// Smallest terms first: the sum does not lose them to rounding.
	for i := len(terms) - 1; i >= 0; i-- {
		s += math.Exp(terms[i] - top)
	}
	return min(1, math.Exp(top)*s), nil
}

// Holm returns Holm's step-down adjusted p-values of ps, in ps's order
// (Holm 1979; statsmodels' multipletests(method='holm')): sorted ascending
// p_(1) <= ... <= p_(m), the adjusted p_(i) is max_{j<=i} min(1,
// (m-j+1) p_(j)). Rejecting the hypotheses whose adjusted p-value is below
// alpha controls the family-wise error rate at alpha over the m tested,
// under any dependence between them. Ties keep ps's order (a stable sort),
// so the result is deterministic. An empty ps gives an empty result.
// Errors: a p-value that is NaN or outside [0, 1] (ErrInvalidInput).
func Holm(ps []float64) ([]float64, error) {
	m := len(ps)
	idx := make([]int, m)
	for i, p := range ps {
		if !(p >= 0 && p <= 1) {
			return nil, errf(ErrInvalidInput, "Holm adjustment: p-value %d is %v, must be in [0, 1]", i, p)
		}
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, m)
	run := 0.0
	for rank, i := range idx {
		run = max(run, min(1, float64(m-rank)*ps[i]))
		out[i] = run
	}
	return out, nil
}
