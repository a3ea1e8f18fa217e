package stats

import (
	"math"
	"slices"
)

// TailConfig configures a peaks-over-threshold tail-quantile estimate.
// Zero fields take the defaults of DefaultTailConfig.
type TailConfig struct {
	// P is the quantile to estimate, in (ThresholdQuantile, 1). Default 0.999.
	P float64
	// ThresholdQuantile is the empirical quantile of the sample used as the
	// threshold u, in (0, P), on samples of up to (ExceedanceScale /
	// (1-ThresholdQuantile))^2 values; on larger samples u rises (see
	// ThresholdQuantileAt). Default 0.95.
	ThresholdQuantile float64
	// ExceedanceScale c caps the number of exceedances at about c*sqrt(n):
	// the threshold quantile is max(ThresholdQuantile, 1 - c/sqrt(n)),
	// never above 1 - 5(1-P). Default 5: u is the P95 up to n = 10,000,
	// the P98.4 at 100,000. A POT fit is biased where the law above u is
	// not yet a GPD (an LLM latency mixture of a lognormal body and a few
	// stalled calls is not, above a fixed P95), while its interval narrows
	// as 1/sqrt(k): with k growing as n the bias outgrows the interval and
	// the coverage falls (81% at n = 100,000 on that mixture). With k
	// growing as sqrt(n) the threshold climbs into the tail as fast as the
	// interval narrows. Negative: a fixed threshold (ThresholdQuantile at
	// every n).
	ExceedanceScale float64
	// MinExceedances is the fewest values above u for a GPD fit; with fewer
	// the estimate is the empirical quantile, labelled MethodEmpirical.
	// At least MinGPDExceedances. Default 30.
	MinExceedances int
	// Level is the confidence level of [Lower, Upper], in (0, 1). Default 0.95.
	Level float64
	// Interval is the interval method for GPD estimates. Default
	// IntervalProfile; when the profile search fails the delta method is
	// used, and the Method label says so.
	Interval IntervalMethod
}

// DefaultTailConfig returns P 0.999, ThresholdQuantile 0.95,
// ExceedanceScale 5, MinExceedances 30, Level 0.95, Interval
// IntervalProfile.
func DefaultTailConfig() TailConfig {
	return TailConfig{P: 0.999, ThresholdQuantile: 0.95, ExceedanceScale: 5, MinExceedances: 30, Level: 0.95, Interval: IntervalProfile}
}

// ThresholdQuantileAt returns the threshold quantile used on a sample of
// n values: max(q0, min(1 - c/sqrt(n), 1 - 5(1-P))) with q0 =
// ThresholdQuantile and c = ExceedanceScale, after defaults; q0 when c is
// negative or n < 1. The cap keeps at least 5x as many values above u as
// above the P-quantile.
func (c TailConfig) ThresholdQuantileAt(n int) float64 {
	c = c.withDefaults()
	q := c.ThresholdQuantile
	if c.ExceedanceScale < 0 || n < 1 {
		return q
	}
	a := min(1-c.ExceedanceScale/math.Sqrt(float64(n)), 1-5*(1-c.P))
	return max(q, a)
}

// withDefaults fills zero fields.
func (c TailConfig) withDefaults() TailConfig {
	d := DefaultTailConfig()
	if c.P == 0 {
		c.P = d.P
	}
	if c.ThresholdQuantile == 0 {
		c.ThresholdQuantile = d.ThresholdQuantile
	}
	if c.ExceedanceScale == 0 {
		c.ExceedanceScale = d.ExceedanceScale
	}
	if c.MinExceedances == 0 {
		c.MinExceedances = d.MinExceedances
	}
	if c.Level == 0 {
		c.Level = d.Level
	}
	return c
}

// Validate reports the first field that is out of range, after defaults.
func (c TailConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case !(c.P > 0 && c.P < 1):
		return errf(ErrInvalidParameter, "TailConfig.P=%v: must be in (0, 1)", c.P)
	case !(c.ThresholdQuantile > 0 && c.ThresholdQuantile < c.P):
		return errf(ErrInvalidParameter, "TailConfig.ThresholdQuantile=%v: must be in (0, P=%v)", c.ThresholdQuantile, c.P)
	case math.IsNaN(c.ExceedanceScale) || math.IsInf(c.ExceedanceScale, 0):
		return errf(ErrInvalidParameter, "TailConfig.ExceedanceScale=%v: must be finite", c.ExceedanceScale)
	case c.MinExceedances < MinGPDExceedances:
		return errf(ErrInvalidParameter, "TailConfig.MinExceedances=%d: must be at least %d", c.MinExceedances, MinGPDExceedances)
	case !(c.Level > 0 && c.Level < 1):
		return errf(ErrInvalidParameter, "TailConfig.Level=%v: must be in (0, 1)", c.Level)
	case c.Interval != IntervalProfile && c.Interval != IntervalDelta:
		return errf(ErrInvalidParameter, "TailConfig.Interval=%d: unknown interval method", c.Interval)
	}
	return nil
}

// TailEstimate is a tail-quantile estimate with its confidence interval.
// All values are in the unit of the sample.
type TailEstimate struct {
	Estimate float64 // the P-quantile
	// Lower and Upper bound Estimate at Level. For MethodEmpirical they are
	// distribution-free order-statistic bounds (binomial ranks).
	Lower, Upper float64
	// UpperUnbounded: the data do not bound the quantile from above at this
	// level. Upper is then a finite stand-in (the largest quantile the
	// profile search examined, 1000x the estimated excess over u, or the
	// sample maximum for MethodEmpirical), not a confidence bound.
	UpperUnbounded bool
	Level          float64
	// Method is MethodGPDProfile, MethodGPDDelta or MethodEmpirical.
	Method string
	// The POT model (zero for MethodEmpirical, except Threshold and NExceed
	// which say why the fit was not made when there were too few).
	Xi, Sigma, Threshold float64
	LogLik               float64 // of the GPD fit
	NExceed              int     // values strictly above Threshold
	N                    int     // sample size
	// Empirical is the type-7 empirical P-quantile of the sample (as
	// Quantile on the sorted sample), whatever Method is: the estimate a
	// report compares the model with.
	Empirical float64
}

// TailQuantile estimates the cfg.P-quantile of values (in any order, not
// modified) by peaks over threshold: u = the type-7 empirical
// cfg.ThresholdQuantileAt(n)-quantile, a GPD fitted by FitGPD to the excesses
// x - u of the values above u, and x_p from POTQuantile, with a
// cfg.Level interval by cfg.Interval. It falls back to the empirical
// quantile (Method MethodEmpirical) when fewer than cfg.MinExceedances
// values exceed u, when the exceedances are degenerate (all equal), when the
// fit lands on the non-regular edge xi = -1, or when neither interval
// method succeeds.
//
// Errors: empty values (ErrTooFewSamples), a NaN or infinite value
// (ErrInvalidInput), an invalid cfg (ErrInvalidParameter).
//
// TailQuantile allocates; a TailEstimator reuses its memory.
func TailQuantile(values []float64, cfg TailConfig) (TailEstimate, error) {
	var e TailEstimator
	return e.Estimate(values, cfg)
}

// TailEstimator computes tail estimates while reusing scratch memory: after
// warm-up an estimate allocates nothing. The zero value is ready to use;
// it is not safe for concurrent use.
type TailEstimator struct {
	scratch []float64
	exc     []float64
	fitter  GPDFitter
}

// Excesses returns the data of the last Estimate's or EstimateTop's GPD
// fit: the excesses x − u of the values above the threshold u, sorted
// ascending (metric unit; e.g. for a QQ plot against the fitted GPD). Empty
// when that call fitted no GPD (too few exceedances). The slice is the
// estimator's: valid until its next call, not to be modified.
func (e *TailEstimator) Excesses() []float64 { return e.exc }

// Estimate is TailQuantile with reused memory. It copies values into
// scratch, selects the threshold's order statistic in O(n) and sorts only
// the TailSize(n, q) largest values.
func (e *TailEstimator) Estimate(values []float64, cfg TailConfig) (TailEstimate, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return TailEstimate{}, err
	}
	n := len(values)
	if n == 0 {
		return TailEstimate{}, errf(ErrTooFewSamples, "tail quantile of an empty sample")
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return TailEstimate{}, errf(ErrInvalidInput, "value[%d]=%v: must be finite", i, v)
		}
	}
	e.scratch = append(e.scratch[:0], values...)
	k := quantileIndex(n, cfg.ThresholdQuantileAt(n))
	// Keep also the order statistic an empirical fallback's lower bound reads.
	if l, _ := orderStatInterval(n, cfg.P, cfg.Level); l-1 < k {
		k = max(l-1, 0)
	}
	selectK(e.scratch, k)
	top := e.scratch[k:]
	slices.Sort(top)
	return e.estimateTop(top, n, cfg)
}

// EstimateTop is Estimate for a caller that already holds the largest
// values of its sample sorted ascending (e.g. a capped top-k store): top
// holds the len(top) largest of n values, and must hold at least
// TailSize(n, cfg.ThresholdQuantileAt(n)) of them (else ErrTooFewSamples).
// top is not modified. The result equals Estimate's on the full sample,
// except that an empirical fallback's Lower is top[0] when the order
// statistic it needs lies below top (only for small n, where
// n*(P-ThresholdQuantile) is within a few standard deviations of 0).
func (e *TailEstimator) EstimateTop(top []float64, n int, cfg TailConfig) (TailEstimate, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return TailEstimate{}, err
	}
	if n <= 0 || len(top) > n {
		return TailEstimate{}, errf(ErrInvalidParameter, "tail of %d values out of a sample of %d", len(top), n)
	}
	need := TailSize(n, cfg.ThresholdQuantileAt(n))
	if len(top) < need {
		return TailEstimate{}, errf(ErrTooFewSamples, "tail estimate at threshold quantile %v of %d values needs the %d largest, got %d", cfg.ThresholdQuantileAt(n), n, need, len(top))
	}
	for i, v := range top {
		if math.IsNaN(v) || math.IsInf(v, 0) || (i > 0 && v < top[i-1]) {
			return TailEstimate{}, errf(ErrInvalidInput, "top[%d]=%v: must be finite and sorted ascending", i, v)
		}
	}
	return e.estimateTop(top, n, cfg)
}

// estimateTop works on top = the sorted order statistics off..n-1
// (0-based) of the sample, off = n-len(top) <= floor((n-1)*q).
func (e *TailEstimator) estimateTop(top []float64, n int, cfg TailConfig) (TailEstimate, error) {
	e.exc = e.exc[:0]
	off := n - len(top)
	u := quantile7(top, off, n, cfg.ThresholdQuantileAt(n))
	first, _ := slices.BinarySearch(top, math.Nextafter(u, math.Inf(1)))
	exc := top[first:]
	est := TailEstimate{Level: cfg.Level, Threshold: u, NExceed: len(exc), N: n,
		Empirical: quantile7(top, off, n, cfg.P)}
	if len(exc) < cfg.MinExceedances {
		return e.empirical(top, off, n, cfg, est), nil
	}
	L, err := potLogRatio(len(exc), n, cfg.P)
	if err != nil {
		return e.empirical(top, off, n, cfg, est), nil
	}
	e.exc = e.exc[:0]
	for _, v := range exc {
		e.exc = append(e.exc, v-u)
	}
	fit, err := e.fitter.Fit(e.exc)
	if err != nil || fit.Xi <= -1 {
		// No fit, or the non-regular xi = -1 edge: no tail model to
		// extrapolate with.
		return e.empirical(top, off, n, cfg, est), nil
	}
	scale := e.fitter.full.scale
	est.Xi, est.Sigma, est.LogLik = fit.Xi, fit.Sigma, fit.LogLik
	est.Estimate = u + fit.Sigma*L*expm1x(fit.Xi*L)
	var lo, hi float64
	method := MethodGPDDelta
	if cfg.Interval == IntervalProfile {
		lo, hi, est.UpperUnbounded, err = e.fitter.profileInterval(L, cfg.Level)
		method = MethodGPDProfile
	}
	if cfg.Interval == IntervalDelta || err != nil {
		est.UpperUnbounded = false
		lo, hi, err = e.fitter.deltaInterval(L, cfg.Level)
		method = MethodGPDDelta
	}
	if err != nil {
		return e.empirical(top, off, n, cfg, est), nil
	}
	est.Method = method
	est.Lower = u + lo*scale
	est.Upper = u + hi*scale
	// Guard the invariant Lower <= Estimate <= Upper against rounding.
	est.Lower = min(est.Lower, est.Estimate)
	est.Upper = max(est.Upper, est.Estimate)
	return est, nil
}

// empirical fills est with the type-7 P-quantile and order-statistic bounds.
// When the lower bound's order statistic is below those available (only
// EstimateTop with a short top on a small sample), Lower is the smallest
// available value.
func (e *TailEstimator) empirical(top []float64, off, n int, cfg TailConfig, est TailEstimate) TailEstimate {
	est.Method = MethodEmpirical
	est.Xi, est.Sigma, est.LogLik = 0, 0, 0
	est.Estimate = quantile7(top, off, n, cfg.P)
	l, u := orderStatInterval(n, cfg.P, cfg.Level)
	li := max(l-1, off, 0) // 0-based
	est.Lower = min(top[li-off], est.Estimate)
	if u > n {
		est.Upper = top[len(top)-1]
		est.UpperUnbounded = true
	} else {
		est.Upper = max(top[u-1-off], est.Estimate)
		est.UpperUnbounded = false
	}
	return est
}

// Threshold returns the POT threshold of a sorted sample: u, the type-7
// q-quantile, and nExc, the number of values strictly above u. ok is false
// when the sample is empty, q is outside (0, 1), or fewer than minExc
// values exceed u (then the caller should report the empirical quantile,
// as TailQuantile does).
func Threshold(sorted []float64, q float64, minExc int) (u float64, nExc int, ok bool) {
	if len(sorted) == 0 || !(q > 0 && q < 1) {
		return 0, 0, false
	}
	u = quantile7(sorted, 0, len(sorted), q)
	first, _ := slices.BinarySearch(sorted, math.Nextafter(u, math.Inf(1)))
	nExc = len(sorted) - first
	return u, nExc, nExc >= minExc && nExc > 0
}
