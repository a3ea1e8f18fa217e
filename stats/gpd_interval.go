package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// IntervalMethod selects how a GPD tail quantile is bounded.
type IntervalMethod int

const (
	// IntervalProfile is the profile-likelihood interval: every x with
	// 2*(l_max - max{l : x_p = x}) <= chi2_1(Level). It is asymmetric like
	// the sampling distribution of a tail quantile, and is the default.
	IntervalProfile IntervalMethod = iota
	// IntervalDelta is the delta-method (Wald) interval
	// x_p ± z*sqrt(g' I^-1 g), with I the observed information of
	// (xi, log sigma) by central differences and g the gradient of x_p.
	IntervalDelta
)

// String returns the Method label the interval produces.
func (m IntervalMethod) String() string {
	switch m {
	case IntervalProfile:
		return MethodGPDProfile
	case IntervalDelta:
		return MethodGPDDelta
	}
	return "unknown"
}

// Method labels carried by TailEstimate.Method (and by verdicts).
const (
	MethodGPDProfile = "gpd_mle_profile"    // GPD fit, profile-likelihood interval
	MethodGPDDelta   = "gpd_mle_delta"      // GPD fit, delta-method interval
	MethodEmpirical  = "empirical_quantile" // type-7 sample quantile, order-statistic interval
)

// chi2Crit returns the chi-square(1) quantile at level and its root.
func chi2Crit(level float64) (crit, z float64) {
	z = distuv.UnitNormal.Quantile(0.5 + level/2)
	return z * z, z
}

// Profile-interval search limits, in t = log(d/d_hat) where d is the excess
// of the quantile over the threshold.
const (
	profileMaxUp   = 6.907755278982137  // log(1000): beyond, the upper end is reported unbounded
	profileMaxDown = 13.815510557964274 // log(1e6)
)

// profileInterval returns the profile-likelihood interval of the scaled
// excess d of the quantile with L = log(zeta/(1-p)), for the last fit.
func (fr *GPDFitter) profileInterval(L, level float64) (lo, hi float64, unbounded bool, err error) {
	crit, _ := chi2Crit(level)
	sol := fr.fit
	dhat := sol.sigma * L * expm1x(sol.xi*L)
	hi, unbounded, err = fr.profileBound(+1, dhat, L, crit, 1.2*L/math.Sqrt(fr.full.n))
	if err != nil {
		return 0, 0, false, err
	}
	// The lower side starts at the upper side's distance in log d.
	lo, _, err = fr.profileBound(-1, dhat, L, crit, math.Log(hi/dhat))
	if err != nil {
		return 0, 0, false, err
	}
	return lo, hi, unbounded, nil
}

// profileBound finds, on one side of d_hat (dir = +1 above, -1 below), the
// d where the deviance D = 2n*(l_max - l_prof(d)) equals crit. It solves
// q(s) = sqrt(D) - sqrt(crit) = 0 in s = |log(d/d_hat)|, where sqrt(D) is
// close to linear, by Newton steps: by the envelope theorem dl_prof/dd is
// the partial derivative of the likelihood at the inner optimum, so q'
// costs nothing extra. Steps are safeguarded by the bracket once the root
// is bracketed, and limited to [1.1s, 4s] before. Each step solves a
// quadratic model of sqrt(D) through the origin (sqrt(D(0)) = 0) matched to
// the value and slope at the current point, which converges like Newton
// but recovers fast from a poor start. The search starts at start (the
// upper side at 1.2*L/sqrt(n), a typical half-width; the lower side at the
// upper side's root); each inner maximisation over theta is warm-started by
// extrapolating theta along s.
func (fr *GPDFitter) profileBound(dir, dhat, L, crit, start float64) (float64, bool, error) {
	s := &fr.full
	lmax := fr.fit.f - 1
	target := math.Sqrt(crit)
	// The last two (s, theta) solutions, for the warm start.
	ps, pt := 0.0, fr.fit.theta
	qs, qt := 0.0, fr.fit.theta
	// q returns q(step) and dq/dstep.
	q := func(step float64) (float64, float64, bool) {
		d := dhat * math.Exp(dir*step)
		o := gpdObjective{s: s, d: d, L: L}
		guess := qt
		if qs != ps {
			guess = qt + (qt-pt)*(step-qs)/(qs-ps)
		}
		th, h, a0, ok := o.maximize(guess)
		if !ok {
			return 0, 0, false
		}
		ps, pt, qs, qt = qs, qt, step, th
		dev := max(2*s.n*(lmax-h), 0)
		// dh/dd at fixed theta (envelope theorem), G = g(theta*d).
		G, G1, _ := g0(th * d)
		dh := -1/d - th*G1/G + L/(d*d)*a0/G + L/d*a0/(G*G)*th*G1
		dDds := -2 * s.n * dh * dir * d
		r := math.Sqrt(dev)
		slope := math.Inf(1)
		if r > 0 {
			slope = dDds / (2 * r)
		}
		return r - target, slope, true
	}
	limit := profileMaxUp
	if dir < 0 {
		limit = profileMaxDown
	}
	const qTol = 1e-4     // sqrt-deviance units: the deviance at the bound is crit ± 4e-4
	a, fa := 0.0, -target // q(a) < 0
	b, fb := math.Inf(1), math.Inf(1)
	x := min(start, limit)
	for it := 0; it < 60; it++ {
		f, df, ok := q(x)
		if !ok {
			return 0, false, errf(ErrNoConvergence, "profile likelihood of the tail quantile at %v: inner maximisation failed", dhat*math.Exp(dir*x))
		}
		if f < 0 {
			a, fa = x, f
		} else {
			b, fb = x, f
		}
		if math.Abs(f) <= qTol {
			return dhat * math.Exp(dir*x), false, nil
		}
		if f < 0 && x >= limit {
			return dhat * math.Exp(dir*x), true, nil
		}
		// Model sqrt(D) as c1*s + c2*s^2 through the origin with the value
		// and slope at x, and step to where it reaches the target; Newton
		// when that has no root.
		r := f + target
		c2 := (df*x - r) / (x * x)
		c1 := df - 2*c2*x
		next := math.NaN()
		if disc := c1*c1 + 4*c2*target; c2 != 0 && disc >= 0 {
			next = (-c1 + math.Sqrt(disc)) / (2 * c2)
		} else if c2 == 0 && c1 > 0 {
			next = target / c1
		}
		if !(next > 0) || math.IsInf(next, 0) {
			next = x - f/df
		}
		if !(df > 0) || math.IsNaN(next) {
			next = math.NaN()
		}
		if math.IsInf(b, 1) {
			// Not yet bracketed: go further, at least 10% and at most 4x.
			if !(next > x) {
				next = 2 * x
			}
			next = min(max(next, 1.1*x), 4*x, limit)
		} else if !(next > a && next < b) {
			next = a + (b-a)*(-fa)/(fb-fa) // regula falsi
			if !(next > a && next < b) {
				next = 0.5 * (a + b)
			}
		}
		if b-a <= 1e-12*(1+a) {
			break
		}
		x = next
	}
	root := a
	if !math.IsInf(b, 1) && math.Abs(fb) < math.Abs(fa) {
		root = b
	}
	return dhat * math.Exp(dir*root), false, nil
}

// maximize finds the maximum over theta of the constrained objective
// (o.d > 0) by climb from x0. The domain is theta > -1 and
// xi = log1p(theta*d)/L >= -1 (a closed edge when it binds).
func (o *gpdObjective) maximize(x0 float64) (theta, value, a0 float64, ok bool) {
	lo, closed := -1.0, false
	if c := math.Expm1(-o.L) / o.d; c > -1 {
		lo, closed = c, true
	}
	x := x0
	if !(x > lo) {
		x = psiMid(lo, max(lo+1, 0))
	}
	// theta to 1e-6 relative leaves the profile value off by ~1e-12 relative.
	return o.climb(x, 0, false, 0, false, lo, closed, 1e-6)
}

// deltaInterval returns the delta-method interval of the scaled excess d
// for the last fit: observed information of (xi, log sigma) by central
// differences of the log-likelihood, gradient of d analytic.
func (fr *GPDFitter) deltaInterval(L, level float64) (lo, hi float64, err error) {
	_, z := chi2Crit(level)
	y := fr.full.y
	xi, ls := fr.fit.xi, math.Log(fr.fit.sigma)
	ll := func(x, s float64) float64 { return gpdLogLik(y, x, math.Exp(s)) }
	const hx, hs = 1e-4, 1e-4
	f0 := ll(xi, ls)
	fxx := (ll(xi+hx, ls) - 2*f0 + ll(xi-hx, ls)) / (hx * hx)
	fss := (ll(xi, ls+hs) - 2*f0 + ll(xi, ls-hs)) / (hs * hs)
	fxs := (ll(xi+hx, ls+hs) - ll(xi+hx, ls-hs) - ll(xi-hx, ls+hs) + ll(xi-hx, ls-hs)) / (4 * hx * hs)
	ixx, iss, ixs := -fxx, -fss, -fxs
	det := ixx*iss - ixs*ixs
	if !(ixx > 0 && iss > 0 && det > 0) || math.IsInf(det, 0) {
		return 0, 0, errf(ErrDegenerate, "observed information of the GPD fit is not positive definite (xi=%v)", xi)
	}
	cxx, css, cxs := iss/det, ixx/det, -ixs/det
	sigma := fr.fit.sigma
	d := sigma * L * expm1x(xi*L)
	gx := sigma * L * L * expm1xPrime(xi*L)
	gs := d
	v := gx*gx*cxx + 2*gx*gs*cxs + gs*gs*css
	if !(v >= 0) || math.IsInf(v, 0) {
		return 0, 0, errf(ErrDegenerate, "delta-method variance of the tail quantile is not finite")
	}
	se := math.Sqrt(v)
	return max(d-z*se, 0), d + z*se, nil
}
