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
)

// decide is the decision rule: breach when the interval's lower bound
// exceeds the budget (the quantile is above budget with 97.5% confidence),
// warn when only the estimate does, ok otherwise.
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
	if est.Method != stats.MethodEmpirical && est.NExceed > 0 {
		v.Evidence = &schemas.Evidence{Exceedances: p.exceedances()}
	}
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
