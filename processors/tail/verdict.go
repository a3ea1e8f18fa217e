package tail

import (
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// Method labels. A verdict with a value carries the label of package stats
// that computed it: stats.MethodGPDProfile ("gpd_mle_profile": GPD fitted by
// maximum likelihood, profile-likelihood interval), stats.MethodGPDDelta
// ("gpd_mle_delta": the same fit, delta-method interval, used when the
// profile search fails) or stats.MethodEmpirical ("empirical_quantile": too
// few exceedances or no fit; the type-7 sample quantile with a
// distribution-free order-statistic interval).
const (
	// MethodNone labels insufficient_data verdicts: nothing was estimated.
	MethodNone = "none"
)

// Detail names, in the order verdicts carry them.
const (
	DetailXi             = "xi"                 // GPD shape (0 for empirical_quantile)
	DetailSigma          = "sigma"              // GPD scale, metric unit (0 for empirical_quantile)
	DetailThresholdU     = "threshold_u"        // POT threshold u, metric unit
	DetailNExceedances   = "n_exceedances"      // kept values strictly above u
	DetailN              = "n"                  // spans in the window, sampled-out included
	DetailKept           = "kept"               // values the estimate used (= verdict N)
	DetailEmpirical      = "empirical_quantile" // type-7 sample P-quantile of the kept values
	DetailUpperUnbounded = "upper_unbounded"    // 1: Upper is a stand-in, the data do not bound the quantile above
	DetailSampleRate     = "sample_rate"        // fraction of the window's spans kept (1: all)
	DetailMinSamples     = "min_samples"        // insufficient_data only: the configured minimum
	// DetailWithoutLargest is the P-quantile estimate of the window without
	// its largest value, on every verdict whose full window was not ok (see
	// withoutLargest); DetailOneCall is 1 when the one-call rule made the
	// verdict ok, 0 otherwise.
	DetailWithoutLargest = "without_largest"
	DetailOneCall        = "one_call"
)

// decide is the decision rule: breach when the interval's lower bound
// exceeds the budget (the quantile is above budget with (1+Level)/2
// confidence, 97.5% at the default), warn when only the estimate does, ok
// otherwise.
func decide(estimate, lower, budget float64) schemas.Status {
	switch {
	case lower > budget:
		return schemas.StatusBreach
	case estimate > budget:
		return schemas.StatusWarn
	}
	return schemas.StatusOK
}

// judge fills v from the window's kept samples (n spans in all, kept at
// rate).
func (p *Processor) judge(v *schemas.Verdict, samples []window.Sample, n int64, rate float64) {
	kept := len(samples)
	v.Threshold = p.cfg.Budget
	v.N = int64(kept)
	if kept < p.cfg.MinSamples {
		p.insufficient(v, n, kept)
		return
	}
	p.values = p.values[:0]
	for _, x := range samples {
		p.values = append(p.values, x.V)
	}
	// Estimate selects the threshold's order statistic and sorts only the
	// values above it: the window is never sorted whole.
	est, err := p.est.Estimate(p.values, p.tcfg)
	if err != nil {
		// Unreachable: values are finite and non-empty, the config valid.
		p.insufficient(v, n, kept)
		return
	}
	v.Value = est.Estimate
	v.Lower, v.Upper, v.IntervalLevel = est.Lower, est.Upper, est.Level
	v.Method = est.Method
	v.Status = decide(est.Estimate, est.Lower, p.cfg.Budget)
	// The evidence is the full window's: taken before withoutLargest refits.
	var evidence *schemas.Evidence
	if est.Method != stats.MethodEmpirical && est.NExceed > 0 {
		evidence = &schemas.Evidence{Exceedances: p.exceedances()}
	}
	var rule []schemas.Detail
	if v.Status != schemas.StatusOK {
		rule = p.withoutLargest(v)
	}
	unbounded := 0.0
	if est.UpperUnbounded {
		unbounded = 1
	}
	v.Details = []schemas.Detail{
		{Name: DetailXi, Value: est.Xi},
		{Name: DetailSigma, Value: est.Sigma},
		{Name: DetailThresholdU, Value: est.Threshold},
		{Name: DetailNExceedances, Value: float64(est.NExceed)},
		{Name: DetailN, Value: float64(n)},
		{Name: DetailKept, Value: float64(kept)},
		{Name: DetailEmpirical, Value: est.Empirical},
		{Name: DetailUpperUnbounded, Value: unbounded},
		{Name: DetailSampleRate, Value: rate},
	}
	v.Details = append(v.Details, rule...)
	v.Evidence = evidence
}

// withoutLargest is the rule that one call is not an incident: a window
// that is not ok is ok when its P-quantile estimate without its largest
// value is within the budget and below the full window's interval — that
// one value explains the whole overshoot, and moves the estimate further
// than the interval allows (a point of outsized influence, not sampling
// noise) — and the detail one_call says so. Why: a 10-minute window
// that slides every minute holds one extreme call for 10 evaluations, so
// without this rule a single call near the timeout breaches 10 times and
// trips a 3-of-10 breaker. A real shift of the tail moves many calls: the
// window without one of them still estimates a quantile over the budget,
// or within its interval, and its decision stands unchanged (removing the
// largest value always lowers the estimate a little: without the second
// condition a shift that sits near the budget would turn ok).
//
// The rule applies only to windows of at least 1/(1-P) kept values (1,000
// at P99.9): in a smaller one the P-quantile is the largest value or
// about it, and one call over the budget is what the SLO measures. It
// covers one call: two extreme calls in one window decide as the window
// does (at calibrate's level they warn, they do not breach). Under
// sampling (MaxSamplesPerSlot) the largest value is the largest kept. It
// costs a second fit, on windows that are not ok only. p.values holds the
// window's values (in the estimator's order). It returns the details
// without_largest and one_call, or none when the rule does not apply.
func (p *Processor) withoutLargest(v *schemas.Verdict) []schemas.Detail {
	if float64(len(p.values))*(1-p.cfg.P) < 1 {
		return nil
	}
	top := 0
	for i, x := range p.values {
		if x > p.values[top] {
			top = i
		}
	}
	last := len(p.values) - 1
	p.values[top], p.values[last] = p.values[last], p.values[top]
	est, err := p.est.Estimate(p.values[:last], p.tcfg)
	if err != nil {
		return nil
	}
	oneCall := 0.0
	if est.Estimate <= p.cfg.Budget && est.Estimate < v.Lower {
		v.Status, oneCall = schemas.StatusOK, 1
	}
	return []schemas.Detail{{Name: DetailWithoutLargest, Value: est.Estimate}, {Name: DetailOneCall, Value: oneCall}}
}

// exceedances thins the sorted excesses x − u of the latest fit (the
// estimator's, no sort of its own) to the QQ plot's
// schemas.MaxEvidencePoints points (the verdict's evidence).
func (p *Processor) exceedances() schemas.Points {
	return schemas.PlottingPoints(p.est.Excesses(), schemas.MaxEvidencePoints)
}

func (p *Processor) insufficient(v *schemas.Verdict, n int64, kept int) {
	v.Status = schemas.StatusInsufficientData
	v.Method = MethodNone
	v.Value, v.Lower, v.Upper, v.IntervalLevel = 0, 0, 0, 0
	v.Details = []schemas.Detail{
		{Name: DetailN, Value: float64(n)},
		{Name: DetailKept, Value: float64(kept)},
		{Name: DetailMinSamples, Value: float64(p.cfg.MinSamples)},
	}
}
