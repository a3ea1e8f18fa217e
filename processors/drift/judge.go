package drift

import (
	"slices"

	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// Method labels: the KS p-value's computation, from package stats.
// stats.MethodKSExact ("ks_exact": the exact null distribution, used when
// D >= MinEffect and both samples have at most 10000 values) or
// stats.MethodKSAsymp ("ks_asymp": SciPy's asymptotic p-value, otherwise).
// The Mann–Whitney p-value of canary mode is always the normal
// approximation with tie and continuity corrections.
const (
	// MethodNone labels insufficient_data verdicts: no test was run.
	MethodNone = "none"
)

// Detail names, in the order verdicts carry them.
const (
	DetailD           = "d"           // KS distance sup|F_current - F_reference|, in [0, 1]
	DetailPValue      = "p_value"     // KS two-sided p-value
	DetailAlpha       = "alpha"       // the configured significance level
	DetailNCurrent    = "n_current"   // values tested on the current side (canary mode: the canary)
	DetailNReference  = "n_reference" // values on the other side (reference window, or the baseline)
	DetailConsecutive = "consecutive" // evaluations in a row with p < alpha and d >= min_effect, this one included
	DetailMWU         = "mw_u"        // canary mode: Mann–Whitney U of the canary (pairs canary > baseline, ties 1/2)
	DetailMWP         = "mw_p"        // canary mode: Mann–Whitney two-sided p-value
	DetailHLShift     = "hl_shift"    // canary mode: Hodges–Lehmann shift canary − baseline, metric unit
	DetailMinSamples  = "min_samples" // insufficient_data only: the configured minimum per side
)

// significant is the per-evaluation test of the k-consecutive rule: the
// difference is both statistically significant and large enough to matter.
func significant(d, p, alpha, minEffect float64) bool {
	return p < alpha && d >= minEffect
}

// nextCount advances the k-consecutive counter: one more when this
// evaluation is significant, back to 0 otherwise (an evaluation without
// enough data resets it too: it is not a significant one).
func nextCount(count int, sig bool) int {
	if !sig {
		return 0
	}
	return count + 1
}

// decide maps the counter to a status: breach from k consecutive
// significant evaluations on, warn for 1..k-1, ok at 0.
func decide(count, k int) schemas.Status {
	switch {
	case count >= k:
		return schemas.StatusBreach
	case count > 0:
		return schemas.StatusWarn
	}
	return schemas.StatusOK
}

// judge tests the sorted values cur against the sorted ref, advances ks's
// counter and fills v. canary adds Mann–Whitney and the Hodges–Lehmann
// shift.
func (p *Processor) judge(v *schemas.Verdict, ks *keyState, cur, ref []float64, canary bool) {
	v.Threshold = p.cfg.EffectiveMinEffect()
	v.N = int64(len(cur) + len(ref))
	if len(cur) < p.cfg.MinSamples || len(ref) < p.cfg.MinSamples {
		ks.consecutive = 0
		v.Status = schemas.StatusInsufficientData
		v.Method = MethodNone
		v.Details = []schemas.Detail{
			{Name: DetailNCurrent, Value: float64(len(cur))},
			{Name: DetailNReference, Value: float64(len(ref))},
			{Name: DetailConsecutive, Value: 0},
			{Name: DetailMinSamples, Value: float64(p.cfg.MinSamples)},
		}
		return
	}
	ks2, err := p.ksTest(cur, ref)
	if err != nil {
		// Unreachable: both sides are non-empty and finite.
		ks.consecutive = 0
		v.Status, v.Method = schemas.StatusInsufficientData, MethodNone
		return
	}
	ks.consecutive = nextCount(ks.consecutive, significant(ks2.D, ks2.P, p.cfg.KSAlpha(), p.cfg.EffectiveMinEffect()))
	v.Value = ks2.D
	v.Method = ks2.Method
	v.Status = decide(ks.consecutive, p.cfg.EffectiveConsecutive())
	v.Details = []schemas.Detail{
		{Name: DetailD, Value: ks2.D},
		{Name: DetailPValue, Value: ks2.P},
		{Name: DetailAlpha, Value: p.cfg.KSAlpha()},
		{Name: DetailNCurrent, Value: float64(len(cur))},
		{Name: DetailNReference, Value: float64(len(ref))},
		{Name: DetailConsecutive, Value: float64(ks.consecutive)},
	}
	v.Evidence = &schemas.Evidence{
		Current:   schemas.ECDFPoints(cur, schemas.MaxEvidencePoints),
		Reference: schemas.ECDFPoints(ref, schemas.MaxEvidencePoints),
		KSAt:      ksArgMax(cur, ref),
	}
	if canary {
		u, mp, hl := mannWhitney(cur, ref)
		v.Details = append(v.Details,
			schemas.Detail{Name: DetailMWU, Value: u},
			schemas.Detail{Name: DetailMWP, Value: mp},
			schemas.Detail{Name: DetailHLShift, Value: hl})
	}
}

// ksTest tests xs against ys: with SciPy's asymptotic p-value, and again
// with stats.KSAuto (exact while both sides have at most 10000 values)
// only where the p-value can decide the verdict — D >= MinEffect and the
// asymptotic p-value below 100 × alpha. The exact distribution costs
// O(n·m) for samples of unequal size (~26 ms for 10000 against 9000
// values) and most evaluations of healthy traffic are far from
// significant. Where the exact p-value is between 1e-12 and 1e-3 the
// asymptotic one is at most 1.13x above it at 20 to 10,000 values a side
// (stats TestKSAsympCloseToExactInTail fails above 2x), so 100× alpha
// leaves no evaluation the exact one would call significant.
func (p *Processor) ksTest(xs, ys []float64) (stats.KSResult, error) {
	r, err := stats.KS2SampSorted(xs, ys, stats.KSAsymp)
	if err != nil || r.D < p.cfg.EffectiveMinEffect() || r.P >= 100*p.cfg.KSAlpha() {
		return r, err
	}
	return stats.KS2SampSorted(xs, ys, stats.KSAuto)
}

// mannWhitney returns U of the sorted xs against the sorted ys, its
// p-value and the Hodges–Lehmann shift xs − ys. When every value of both samples is tied (stats reports
// ErrDegenerate) there is no evidence of a shift: U = n*m/2, p = 1,
// shift 0.
func mannWhitney(xs, ys []float64) (u, p, shift float64) {
	mw, err := stats.MannWhitneyUSorted(xs, ys)
	if err != nil {
		return float64(len(xs)) * float64(len(ys)) / 2, 1, 0
	}
	hl, err := stats.HodgesLehmannSorted(xs, ys)
	if err != nil {
		hl = 0 // unreachable: the samples are non-empty, finite and bounded (no difference overflows)
	}
	return mw.U, mw.P, hl
}

func sortedValues(dst []float64, samples []window.Sample) []float64 {
	dst = dst[:0]
	for _, x := range samples {
		dst = append(dst, x.V)
	}
	slices.Sort(dst)
	return dst
}

// ksArgMax returns the value x at which |F_xs(x) − F_ys(x)| is largest
// (the smallest such x on ties), xs and ys sorted and non-empty: the point
// where the KS distance is attained, for the evidence. O(len(xs)+len(ys)).
func ksArgMax(xs, ys []float64) float64 {
	n, m := float64(len(xs)), float64(len(ys))
	i, j := 0, 0
	best, at := -1.0, xs[0]
	for i < len(xs) || j < len(ys) {
		var x float64
		switch {
		case j == len(ys) || i < len(xs) && xs[i] <= ys[j]:
			x = xs[i]
		default:
			x = ys[j]
		}
		for i < len(xs) && xs[i] == x {
			i++
		}
		for j < len(ys) && ys[j] == x {
			j++
		}
		if d := abs(float64(i)/n - float64(j)/m); d > best {
			best, at = d, x
		}
	}
	return at
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
