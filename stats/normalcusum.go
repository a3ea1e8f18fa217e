package stats

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// NormalCUSUM is the two-sided CUSUM of standardized scores z (Page 1954),
// each side tuned to a mean shift of 2K standard deviations:
//
//	S+_t = max(0, S+_{t-1} + z_t - K),   S-_t = max(0, S-_{t-1} - z_t - K),
//
// an alarm when either side reaches H. With z ~ N(0, 1) in control the
// one-sided run length to a false alarm has mean SiegmundARL(K, H); the
// two sides together alarm about twice as often (1/ARL = 1/ARL+ + 1/ARL-).
// A mean shift of delta > K standard deviations raises a side by about
// delta - K per observation: it alarms after about H/(delta - K)
// observations.
type NormalCUSUM struct {
	K float64 // reference value, in standard deviations (> 0)
}

// Step returns the two sides after one more score z.
func (c NormalCUSUM) Step(hi, lo, z float64) (float64, float64) {
	return max(0, hi+z-c.K), max(0, lo-z-c.K)
}

// siegmundCorrection is the 1.166 of Siegmund's approximation: the mean
// overshoot of a Gaussian random walk over its barrier (2 × 0.583).
const siegmundCorrection = 1.166

// SiegmundARL is Siegmund's (1985) approximation of the in-control
// average run length, in observations, of the one-sided CUSUM
// max(0, S + z - k) with threshold h, z ~ N(0, 1):
//
//	ARL0 = (exp(2k·b) - 2k·b - 1) / (2k²),   b = h + 1.166,
//
// accurate within a few percent for k in [0.1, 1.5] and ARL0 above ~100
// (Siegmund, Sequential Analysis, 1985, p. 27). k > 0, h >= 0.
func SiegmundARL(k, h float64) float64 {
	x := 2 * k * (h + siegmundCorrection)
	return (math.Expm1(x) - x) / (2 * k * k)
}

// CUSUMThresholdForARL is the threshold h at which SiegmundARL(k, h) = arl,
// by bisection (SiegmundARL increases with h); 0 when arl is already
// reached at h = 0. Errors (ErrInvalidParameter): k not positive and
// finite, arl not positive and finite.
func CUSUMThresholdForARL(k, arl float64) (float64, error) {
	if !(k > 0) || math.IsInf(k, 0) || !(arl > 0) || math.IsInf(arl, 0) {
		return 0, errf(ErrInvalidParameter, "CUSUM threshold for k=%v and ARL=%v: both must be positive and finite", k, arl)
	}
	if SiegmundARL(k, 0) >= arl {
		return 0, nil
	}
	// exp(2k·b) ≈ 2k²·arl bounds b from above once arl is large; double
	// until above, then bisect.
	lo, hi := 0.0, 1.0
	for SiegmundARL(k, hi) < arl {
		lo, hi = hi, 2*hi
	}
	for range 60 {
		mid := (lo + hi) / 2
		if SiegmundARL(k, mid) < arl {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// NormalScore is the normal score of x against the sorted reference ref
// (non-empty): Φ⁻¹(u), u = (below + equal/2 + 1/2) / (n + 1), where below
// and equal count the reference values below and equal to x — x's
// mid-rank among the reference plus itself, scaled into (0, 1). When x
// comes from the reference's distribution (continuous), u is uniform on
// the n+1 ranks and z is N(0, 1) up to the discreteness of ranks, whatever
// the distribution's shape (a bounded, skewed score included); ties make
// the scores' spread smaller, never larger. |z| is at most
// Φ⁻¹(1 - 1/(2(n+1))) (3.9 at n = 12,000). O(log n).
func NormalScore(ref []float64, x float64) float64 {
	n := len(ref)
	below := sort.SearchFloat64s(ref, x)
	upto := below
	for upto < n && upto-below < 8 && ref[upto] == x {
		upto++
	}
	if upto < n && ref[upto] == x { // many ties: binary search for the end
		upto = below + sort.Search(n-below, func(i int) bool { return ref[below+i] > x })
	}
	u := (float64(below) + float64(upto-below)/2 + 0.5) / float64(n+1)
	return distuv.UnitNormal.Quantile(u)
}
