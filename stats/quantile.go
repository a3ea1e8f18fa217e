package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"
)

// Quantile returns the type-7 (linear interpolation, NumPy's default)
// sample q-quantile of a sorted sample: with h = (n-1)*q,
// x[floor(h)] + (h - floor(h)) * (x[floor(h)+1] - x[floor(h)]).
// q = 0 gives the minimum and q = 1 the maximum. Errors: empty sample
// (ErrTooFewSamples), q outside [0, 1] (ErrInvalidParameter). The sample is
// assumed sorted ascending and finite; that is not checked.
func Quantile(sorted []float64, q float64) (float64, error) {
	if len(sorted) == 0 {
		return 0, errf(ErrTooFewSamples, "quantile of an empty sample")
	}
	if !(q >= 0 && q <= 1) {
		return 0, errf(ErrInvalidParameter, "quantile level q=%v: must be in [0, 1]", q)
	}
	return quantile7(sorted, 0, len(sorted), q), nil
}

// quantile7 is the type-7 quantile of a window of n values whose order
// statistics from index off on are in top (top[i] is order statistic
// off+i, 0-based). The caller guarantees the needed ones are present.
func quantile7(top []float64, off, n int, q float64) float64 {
	h := float64(n-1) * q
	k := int(math.Floor(h))
	if k >= n-1 {
		return top[n-1-off]
	}
	frac := h - float64(k)
	lo := top[k-off]
	if frac == 0 {
		return lo
	}
	return lo + frac*(top[k+1-off]-lo)
}

// quantileIndex is floor((n-1)*q), the lower order statistic (0-based) the
// type-7 q-quantile reads.
func quantileIndex(n int, q float64) int {
	return int(math.Floor(float64(n-1) * q))
}

// TailSize returns how many of the largest values of a sample of n a tail
// estimate at threshold quantile q needs: n - floor((n-1)*q).
// TailEstimator.EstimateTop needs at least this many.
func TailSize(n int, q float64) int {
	return n - quantileIndex(n, q)
}

// selectK partially sorts a so that a[k] is the k-th smallest (0-based),
// a[:k] <= a[k] <= a[k+1:]. Quickselect with a median-of-three pivot; a
// subrange that recurses too deep is sorted instead, so the worst case is
// O(n log n).
func selectK(a []float64, k int) {
	lo, hi := 0, len(a)-1
	budget := 2 * (bitsLen(len(a)) + 1)
	for hi > lo {
		if budget == 0 || hi-lo < 16 {
			slices.Sort(a[lo : hi+1])
			return
		}
		budget--
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return // a[j+1 .. i-1] all equal the pivot
		}
	}
}

func bitsLen(n int) int {
	b := 0
	for n > 0 {
		b++
		n >>= 1
	}
	return b
}

// binomCDF returns P(Bin(n, p) <= k) = I_{1-p}(n-k, k+1).
func binomCDF(k, n int, p float64) float64 {
	if k < 0 {
		return 0
	}
	if k >= n {
		return 1
	}
	return mathext.RegIncBeta(float64(n-k), float64(k+1), 1-p)
}

// orderStatInterval returns 1-based ranks (l, u) of order statistics that
// bracket the p-quantile with confidence at least level, distribution-free:
// l is the largest rank with P(X_(l) > x_p) = P(Bin(n,p) <= l-1) <= alpha/2,
// u the smallest with P(X_(u) < x_p) = 1 - P(Bin(n,p) <= u-1) <= alpha/2.
// l = 0 means no lower order statistic qualifies, u = n+1 no upper one.
func orderStatInterval(n int, p, level float64) (l, u int) {
	alpha := 1 - level
	mean := float64(n) * p
	sd := math.Sqrt(mean * (1 - p))
	_, z := chi2Crit(level)
	// Start near the normal approximation, then walk to the exact ranks.
	l = max(0, min(n, int(math.Floor(mean-z*sd))))
	for l > 0 && binomCDF(l-1, n, p) > alpha/2 {
		l--
	}
	for l < n && binomCDF(l, n, p) <= alpha/2 {
		l++
	}
	u = max(1, min(n+1, int(math.Ceil(mean+z*sd))+1))
	for u <= n && 1-binomCDF(u-1, n, p) > alpha/2 {
		u++
	}
	for u > 1 && 1-binomCDF(u-2, n, p) <= alpha/2 {
		u--
	}
	return l, u
}
