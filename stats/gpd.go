package stats

import (
	"math"
	"slices"
)

// MinGPDExceedances is the fewest exceedances FitGPD accepts. Below it the
// likelihood is too flat for the fit to mean anything; tail estimators fall
// back to the empirical quantile well before that (TailConfig.MinExceedances).
const MinGPDExceedances = 10

// GPD is a Generalized Pareto distribution with location 0, fitted to
// exceedances (values above a threshold, minus the threshold):
//
//	F(y) = 1 - (1 + Xi*y/Sigma)^(-1/Xi)   (Xi != 0)
//	F(y) = 1 - exp(-y/Sigma)               (Xi == 0)
//
// for y >= 0 (and y < Sigma/|Xi| when Xi < 0). Xi > 0 is a heavy,
// Pareto-like tail (the k-th moment is infinite for Xi >= 1/k), Xi = 0 the
// exponential, Xi < 0 a bounded tail with endpoint Sigma/|Xi|.
type GPD struct {
	Xi     float64 // shape ξ (SciPy's c), dimensionless
	Sigma  float64 // scale σ > 0, in the unit of the data
	LogLik float64 // log-likelihood of the fitted sample at (Xi, Sigma)
	N      int     // number of exceedances fitted
}

// GPDLogLik returns the GPD log-likelihood of exceedances y_i >= 0:
//
//	l = -n*log(sigma) - (1 + 1/xi) * sum(log1p(xi*y_i/sigma))   (xi != 0)
//	l = -n*log(sigma) - sum(y_i)/sigma                          (xi == 0)
//
// It returns -Inf (not an error) when a value lies outside the support
// (y >= sigma/|xi| for xi < 0), and +Inf when xi < -1 and a value sits
// exactly on the endpoint, where the density is unbounded. Errors: an empty
// sample (ErrTooFewSamples), a negative, NaN or infinite value
// (ErrInvalidInput), sigma <= 0 or a non-finite xi (ErrInvalidParameter).
func GPDLogLik(exc []float64, xi, sigma float64) (float64, error) {
	if len(exc) == 0 {
		return 0, errf(ErrTooFewSamples, "GPD log-likelihood of an empty sample")
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) || math.IsNaN(xi) || math.IsInf(xi, 0) {
		return 0, errf(ErrInvalidParameter, "GPD parameters xi=%v sigma=%v: need finite xi and sigma > 0", xi, sigma)
	}
	for i, v := range exc {
		if !(v >= 0) || math.IsInf(v, 0) {
			return 0, errf(ErrInvalidInput, "exceedance[%d]=%v: must be finite and >= 0", i, v)
		}
	}
	return gpdLogLik(exc, xi, sigma), nil
}

// gpdLogLik is GPDLogLik without validation.
func gpdLogLik(y []float64, xi, sigma float64) float64 {
	n := float64(len(y))
	if xi == 0 {
		s := 0.0
		for _, v := range y {
			s += v
		}
		return -n*math.Log(sigma) - s/sigma
	}
	k := xi / sigma
	s := 0.0
	onBoundary := false
	for _, v := range y {
		z := k * v
		if z < -1 {
			return math.Inf(-1)
		}
		if z == -1 {
			onBoundary = true
			continue
		}
		s += math.Log1p(z)
	}
	if onBoundary {
		switch {
		case xi > -1:
			return math.Inf(-1)
		case xi < -1:
			return math.Inf(1)
		}
		// xi == -1: the coefficient (1 + 1/xi) is 0, the boundary term drops.
	}
	return -n*math.Log(sigma) - (1+1/xi)*s
}

// FitGPD fits a GPD (location 0) to exceedances by maximum likelihood, using
// Grimshaw's (1993) one-dimensional reduction: with theta = xi/sigma the
// likelihood maximised over xi for fixed theta is reached at
// xi(theta) = mean(log1p(theta*y)), leaving a smooth profile in theta alone.
// FitGPD scans that profile on both sides of 0 (theta in (-1/max(y), 0) and
// (0, inf)), refines every local maximum by safeguarded Newton iteration
// (started from the probability-weighted-moment estimate of Hosking and
// Wallis when it falls in the bracket), adds the exponential case xi = 0,
// adds the edge xi = -1, sigma = max(y) (the supremum over xi >= -1 when
// the likelihood rises towards that edge, as it can for small samples from
// short tails; the likelihood is unbounded beyond it), and keeps the
// candidate with the best log-likelihood. The scan stops at xi = 50.
// A fit with Xi = -1 is non-regular: no interval is derived from it.
//
// exc may be unsorted (it is not modified). Errors: fewer than
// MinGPDExceedances values (ErrTooFewSamples), a negative, NaN or infinite
// value (ErrInvalidInput), all values equal (ErrDegenerate).
//
// FitGPD allocates scratch memory; a GPDFitter reuses it.
func FitGPD(exc []float64) (GPD, error) {
	var f GPDFitter
	return f.Fit(exc)
}

// GPDFitter fits GPDs while reusing scratch memory: once its buffers have
// grown to the largest sample seen, Fit does not allocate. The zero value is
// ready to use. A GPDFitter is not safe for concurrent use.
type GPDFitter struct {
	buf  []float64 // scaled, sorted exceedances
	sbuf []float64 // the evenly spaced subsample used by the root scan
	full gpdSample
	sub  gpdSample
	grid [maxGridPoints]gridPoint
	fit  gpdSolution // the last successful fit, in scaled units
}

// gpdSolution is a fit in scaled units (largest exceedance = 1).
type gpdSolution struct {
	theta float64 // xi / sigma_scaled
	f     float64 // per-exceedance profile objective at theta (loglik/n + 1 + log(scale))
	xi    float64
	sigma float64 // scaled
}

// Fit is FitGPD with reused scratch memory.
func (fr *GPDFitter) Fit(exc []float64) (GPD, error) {
	if err := fr.load(exc); err != nil {
		return GPD{}, err
	}
	sol, err := fr.solve()
	if err != nil {
		return GPD{}, err
	}
	fr.fit = sol
	scale := fr.full.scale
	ll := gpdLogLik(fr.full.y, sol.xi, sol.sigma) - float64(len(exc))*math.Log(scale)
	return GPD{Xi: sol.xi, Sigma: sol.sigma * scale, LogLik: ll, N: len(exc)}, nil
}

// load validates exc, copies it into the scratch buffer scaled by its
// maximum and sorted, and prepares the full sample and the subsample.
func (fr *GPDFitter) load(exc []float64) error {
	n := len(exc)
	if n < MinGPDExceedances {
		return errf(ErrTooFewSamples, "GPD fit needs at least %d exceedances, got %d", MinGPDExceedances, n)
	}
	maxv, minv := 0.0, math.Inf(1)
	for i, v := range exc {
		if !(v >= 0) || math.IsInf(v, 0) {
			return errf(ErrInvalidInput, "exceedance[%d]=%v: must be finite and >= 0", i, v)
		}
		maxv = max(maxv, v)
		minv = min(minv, v)
	}
	if maxv == minv {
		return errf(ErrDegenerate, "all %d exceedances equal %v: the GPD scale and shape are undefined", n, maxv)
	}
	fr.buf = append(fr.buf[:0], exc...)
	if !slices.IsSorted(fr.buf) {
		slices.Sort(fr.buf)
	}
	inv := 1 / maxv
	for i := range fr.buf {
		fr.buf[i] *= inv
	}
	fr.buf[n-1] = 1 // exact, whatever the rounding of maxv*inv
	fr.full.init(fr.buf, maxv)
	if n <= subsampleSize {
		fr.sub = fr.full
		return nil
	}
	// Evenly spaced order statistics, always including the minimum and the
	// maximum, so that the subsample has the same support bound theta > -1.
	fr.sbuf = fr.sbuf[:0]
	for j := 0; j < subsampleSize; j++ {
		i := int(math.Round(float64(j) * float64(n-1) / float64(subsampleSize-1)))
		fr.sbuf = append(fr.sbuf, fr.buf[i])
	}
	fr.sub.init(fr.sbuf, maxv)
	return nil
}

// pwmTheta returns theta = xi/sigma of the probability-weighted-moment
// estimate (Hosking & Wallis 1987, plotting positions (i-0.35)/n) of the
// sorted scaled sample, with xi clamped to [-0.9, 0.95] where the PWM
// estimator is defined.
func pwmTheta(y []float64) float64 {
	n := float64(len(y))
	a0, a1 := 0.0, 0.0
	for i, v := range y {
		p := (float64(i+1) - 0.35) / n
		a0 += v
		a1 += (1 - p) * v
	}
	a0 /= n
	a1 /= n
	den := a0 - 2*a1
	xi := 0.95
	sigma := a0 * (1 - xi)
	if den > 0 {
		xi = 2 - a0/den
		sigma = 2 * a0 * a1 / den
	}
	xi = min(max(xi, -0.9), 0.95)
	if !(sigma > 0) {
		sigma = a0 * (1 - xi)
	}
	th := xi / sigma
	if th <= -1 {
		th = -0.5
	}
	return th
}

// solve runs Grimshaw's reduction on the loaded sample.
func (fr *GPDFitter) solve() (gpdSolution, error) {
	full := &fr.full
	// Two closed-form candidates: the exponential (xi = 0, sigma = mean)
	// and the xi = -1 edge (sigma = max = 1 scaled, loglik -n*log(max)),
	// where the likelihood of small samples from short tails can peak.
	best := gpdSolution{theta: 0, f: -math.Log(full.pw[1]), xi: 0, sigma: full.pw[1]}
	if edge := 1.0; edge > best.f {
		best = gpdSolution{theta: -1, f: edge, xi: -1, sigma: 1}
	}
	start := pwmTheta(full.y)
	pts := fr.scan(&fr.sub)
	exact := fr.sub.n == full.n
	obj := gpdObjective{s: full}
	nBrackets := 0
	for i := 0; i+1 < len(pts); i++ {
		if pts[i].g > 0 && pts[i+1].g < 0 {
			nBrackets++
		}
	}
	for i := 0; i+1 < len(pts); i++ {
		if !(pts[i].g > 0 && pts[i+1].g < 0) {
			continue
		}
		ia, ib := i, i+1
		a, b := pts[ia].theta, pts[ib].theta
		if !exact && nBrackets > 1 {
			// Confirm the bracket on the full sample, widening it along the
			// grid when the subsample put the root slightly off.
			ga := obj.grad(a)
			for ga <= 0 && ia > 0 {
				ia--
				a = pts[ia].theta
				ga = obj.grad(a)
			}
			gb := obj.grad(b)
			for gb >= 0 && ib+1 < len(pts) {
				ib++
				b = pts[ib].theta
				gb = obj.grad(b)
			}
			if !(ga > 0 && gb < 0) {
				continue
			}
		}
		x0 := start
		if !(x0 > a && x0 < b) {
			x0 = psiMid(a, b)
		}
		// With a single bracket from the subsample, the climb establishes
		// its own bracket on the full sample (the local maximum it reaches
		// is the only candidate anyway); with several, each was confirmed.
		confirmed := exact || nBrackets > 1
		th, f, a0, ok := obj.climb(x0, a, confirmed, b, confirmed, -1, false, 1e-12)
		if !ok {
			continue
		}
		xi := th * a0
		if xi < -1 {
			continue
		}
		if f > best.f {
			best = gpdSolution{theta: th, f: f, xi: xi, sigma: a0}
		}
	}
	if nBrackets == 0 && !exact {
		// The subsample showed no interior maximum; the full sample may
		// still have one (a root close to a grid point): climb from the PWM
		// start without a bracket.
		if th, f, a0, ok := obj.climb(start, 0, false, 0, false, -1, false, 1e-12); ok {
			if xi := th * a0; xi >= -1 && xi <= xiScanHardMax && f > best.f {
				best = gpdSolution{theta: th, f: f, xi: xi, sigma: a0}
			}
		}
	}
	if math.IsNaN(best.f) || math.IsInf(best.f, 0) || !(best.sigma > 0) {
		return gpdSolution{}, errf(ErrNoConvergence, "GPD fit of %d exceedances: no finite maximum of the profile likelihood", len(full.y))
	}
	return best, nil
}

// gridPoint is one point of the profile scan.
type gridPoint struct {
	theta float64
	g     float64 // derivative of the profile objective
}

const (
	subsampleSize = 128 // order statistics used to locate the profile's maxima
	maxGridPoints = 160
	xiScanStepPos = 0.5 // xi increment between scan points for theta > 0
	xiScanStepNeg = 0.2 // xi increment between scan points for theta < 0
	psiScanMin    = -34 // log1p(theta) floor: 1+theta ~ 1.7e-15
	// psiScanMaxStep caps a positive scan step in log1p(theta); near
	// theta = 0 the local rate dxi/dpsi understates the growth of xi.
	psiScanMaxStep = 1.0
	xiScanMax      = 4.0  // the positive scan goes at least this far in xi ...
	xiScanHardMax  = 50.0 // ... and on to here while the profile still rises
)

// scan evaluates the profile derivative on a grid roughly uniform in xi
// (steps in psi = log1p(theta) of dxi/(dxi/dpsi)), from xi = -1 (or as
// close to theta = -1 as float64 resolves) to xi = xiScanMax, continuing to
// xiScanHardMax while the profile still rises, and returns the points in
// increasing theta.
func (fr *GPDFitter) scan(s *gpdSample) []gridPoint {
	pts := fr.grid[:0]
	walk := func(dir, step float64) {
		psi := 0.0
		for len(pts) < cap(pts) {
			th := math.Expm1(psi)
			a0, a1, _ := s.moments(th)
			g := -a1/a0 - a0 - th*a1
			xi := th * a0
			if th != 0 || dir > 0 {
				pts = append(pts, gridPoint{th, g})
			}
			if dir < 0 && xi <= -1 {
				return
			}
			if dir > 0 && ((xi >= xiScanMax && g < 0) || xi >= xiScanHardMax) {
				return
			}
			// dxi/dpsi = (a0 + theta*a1)*(1 + theta) > 0
			rate := (a0 + th*a1) * (1 + th)
			dpsi := step / rate
			if dir > 0 {
				dpsi = min(dpsi, psiScanMaxStep)
			}
			next := psi + dir*dpsi
			if !(rate > 0) || math.IsInf(next, 0) || next < psiScanMin || next == psi {
				return
			}
			psi = next
		}
	}
	walk(-1, xiScanStepNeg)
	slices.Reverse(pts)
	walk(+1, xiScanStepPos)
	return pts
}

// psiMid is the midpoint of (a, b) in psi = log1p(theta), which bisects
// sensibly both near theta = -1 and across orders of magnitude.
func psiMid(a, b float64) float64 {
	m := math.Expm1(0.5 * (math.Log1p(a) + math.Log1p(b)))
	if !(m > a && m < b) {
		m = 0.5 * (a + b)
	}
	return m
}
