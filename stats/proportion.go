package stats

import "math"

// Wilson returns the Wilson score interval of a proportion with k successes
// in n trials at confidence level (e.g. 0.95), matching
// scipy.stats.binomtest(k, n).proportion_ci(level, method='wilson'):
//
//	center = (2*n*p + z^2) / (2*(n + z^2)),
//	half   = z/(2*(n + z^2)) * sqrt(4*n*p*(1-p) + z^2),
//
// p = k/n, z = Phi^-1(1/2 + level/2); lo is exactly 0 when k = 0 and hi
// exactly 1 when k = n. Errors: n < 1, k outside [0, n] (ErrInvalidInput),
// level outside (0, 1) (ErrInvalidParameter).
func Wilson(k, n int64, level float64) (lo, hi float64, err error) {
	if n < 1 || k < 0 || k > n {
		return 0, 0, errf(ErrInvalidInput, "Wilson interval of %d successes in %d trials: need 0 <= k <= n and n >= 1", k, n)
	}
	if !(level > 0 && level < 1) {
		return 0, 0, errf(ErrInvalidParameter, "Wilson level=%v: must be in (0, 1)", level)
	}
	_, z := chi2Crit(level)
	fn := float64(n)
	p := float64(k) / fn
	q := 1 - p
	denom := 2 * (fn + z*z)
	center := (2*fn*p + z*z) / denom
	half := z / denom * math.Sqrt(4*fn*p*q+z*z)
	lo, hi = center-half, center+half
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return max(lo, 0), min(hi, 1), nil
}

// TwoProportionResult is a two-sided two-proportion z-test.
type TwoProportionResult struct {
	P1, P2 float64 // k1/n1 and k2/n2
	Diff   float64 // P1 - P2
	// Z = Diff / sqrt(pool*(1-pool)*(1/n1 + 1/n2)), pool = (k1+k2)/(n1+n2);
	// P its two-sided normal p-value.
	Z, P float64
}

// TwoProportionZ tests whether two proportions differ (pooled-variance
// z-test, no continuity correction). Errors: n < 1 or k outside [0, n]
// (ErrInvalidInput); a pooled proportion of 0 or 1 (ErrDegenerate: both
// groups all failures or all successes, nothing to compare).
func TwoProportionZ(k1, n1, k2, n2 int64) (TwoProportionResult, error) {
	if n1 < 1 || n2 < 1 || k1 < 0 || k2 < 0 || k1 > n1 || k2 > n2 {
		return TwoProportionResult{}, errf(ErrInvalidInput, "two-proportion test of %d/%d and %d/%d: need 0 <= k <= n and n >= 1", k1, n1, k2, n2)
	}
	f1, f2 := float64(n1), float64(n2)
	r := TwoProportionResult{P1: float64(k1) / f1, P2: float64(k2) / f2}
	r.Diff = r.P1 - r.P2
	pool := float64(k1+k2) / (f1 + f2)
	if pool == 0 || pool == 1 {
		return r, errf(ErrDegenerate, "two-proportion test: pooled proportion is %v, the z statistic is undefined", pool)
	}
	se := math.Sqrt(pool * (1 - pool) * (1/f1 + 1/f2))
	r.Z = r.Diff / se
	r.P = clamp01(math.Erfc(math.Abs(r.Z) / math.Sqrt2))
	return r, nil
}
