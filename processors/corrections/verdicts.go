package corrections

import (
	"math"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// rateVerdict judges one key's correction rate.
//
// Value is the rate, Threshold MaxRate, [Lower, Upper] the Wilson interval
// at 0.95, method "wilson". Details: corrections, responses, rate,
// wilson_low, wilson_high, repeats, unjoined_tenant (corrections of the
// key's tenant in the window that joined no span), then one count per
// correction kind (reject, rephrase, slot_replace, thumbs_down, edit,
// regenerate, escalate, other).
func (p *Processor) rateVerdict(k schemas.Key, t tally, unjoinedTenant int64, from, to int64) schemas.Verdict {
	v := p.meta.NewVerdict(Name, MetricRate, k, from, to)
	v.Threshold = p.cfg.MaxRate
	v.Method = MethodWilson
	v.N = t.responses
	x := min(t.corrections, t.responses)
	var rate, lo, hi float64
	if t.responses >= int64(p.cfg.MinResponses) {
		rate = float64(x) / float64(t.responses)
		// Cannot fail: 0 <= x <= responses, responses >= 1, level in (0, 1).
		lo, hi, _ = stats.Wilson(x, t.responses, Level)
		v.Value, v.Lower, v.Upper, v.IntervalLevel = rate, lo, hi, Level
		v.Status = p.cfg.JudgeRate(rate, lo)
	} else {
		v.Status = schemas.StatusInsufficientData
	}
	v.Details = make([]schemas.Detail, 0, 7+nKinds)
	v.Details = append(v.Details,
		schemas.Detail{Name: "corrections", Value: float64(t.corrections)},
		schemas.Detail{Name: "responses", Value: float64(t.responses)},
		schemas.Detail{Name: "rate", Value: rate},
		schemas.Detail{Name: "wilson_low", Value: lo},
		schemas.Detail{Name: "wilson_high", Value: hi},
		schemas.Detail{Name: "repeats", Value: float64(t.repeats)},
		schemas.Detail{Name: "unjoined_tenant", Value: float64(unjoinedTenant)},
	)
	for i, kind := range kinds {
		v.Details = append(v.Details, schemas.Detail{Name: string(kind), Value: float64(t.kinds[i])})
	}
	v.Details = append(v.Details, schemas.Detail{Name: "other", Value: float64(t.kinds[nKinds-1])})
	return v
}

// minExpectedCorrections is the fewest corrections the smaller side must
// expect under the pooled rate for a canary breach (the usual validity
// rule of the two-proportion z-test).
const minExpectedCorrections = 5

// JudgeCanary: with d the canary's rate minus the baseline's and p the
// two-sided p-value, breach when p < Alpha and d >= MinEffect (the canary
// is worse, surely and by enough to matter), warn when p < Alpha and
// 0 < d < MinEffect (surely worse, but by little), ok otherwise.
func (c *Config) JudgeCanary(d, p float64) schemas.Status {
	switch {
	case p < c.Alpha && d > 0 && d >= c.MinEffect:
		return schemas.StatusBreach
	case p < c.Alpha && d > 0:
		return schemas.StatusWarn
	}
	return schemas.StatusOK
}

// JudgeRate: breach when the Wilson lower bound is above MaxRate (the rate
// is over budget beyond reasonable doubt), warn when the rate itself is,
// ok otherwise.
func (c *Config) JudgeRate(rate, wilsonLow float64) schemas.Status {
	switch {
	case wilsonLow > c.MaxRate:
		return schemas.StatusBreach
	case rate > c.MaxRate:
		return schemas.StatusWarn
	}
	return schemas.StatusOK
}

// canaryVerdict compares a canary key with its baseline (same tenant,
// service and model, variant BaselineVariant) by the pooled two-proportion
// z-test (stats.TwoProportionZ, two-sided).
//
// Value is canary rate - baseline rate, Threshold 0, [Lower, Upper] the
// Newcombe hybrid score interval of the difference at 0.95 (built from the
// two Wilson intervals), method "two_proportion_z". Breach when p < Alpha
// and the canary's rate is the higher; ok otherwise; insufficient_data when
// either side has fewer than MinResponses responses (also when the
// baseline has no data at all), with rates, z 0 and p 1. When neither side has a correction the
// rates are equal: ok with z 0 and p 1. Details: canary_corrections,
// canary_responses, canary_rate, baseline_corrections, baseline_responses,
// baseline_rate, z, p.
func (p *Processor) canaryVerdict(k schemas.Key, c, b tally, from, to int64) schemas.Verdict {
	v := p.meta.NewVerdict(Name, MetricCanary, k, from, to)
	v.Method = MethodTwoProp
	v.N = c.responses + b.responses
	xc, xb := min(c.corrections, c.responses), min(b.corrections, b.responses)
	var rc, rb, z float64
	pval := 1.0
	minN := int64(p.cfg.MinResponses)
	if c.responses < minN || b.responses < minN {
		v.Status = schemas.StatusInsufficientData
	} else {
		rc, rb = float64(xc)/float64(c.responses), float64(xb)/float64(b.responses)
		if res, err := stats.TwoProportionZ(xc, c.responses, xb, b.responses); err == nil {
			z, pval = res.Z, res.P
		}
		// else: pooled proportion 0 or 1, both sides identical: z 0, p 1.
		lc, hc, _ := stats.Wilson(xc, c.responses, Level)
		lb, hb, _ := stats.Wilson(xb, b.responses, Level)
		d := rc - rb
		v.Value = d
		v.Lower = d - math.Sqrt((rc-lc)*(rc-lc)+(hb-rb)*(hb-rb))
		v.Upper = d + math.Sqrt((hc-rc)*(hc-rc)+(rb-lb)*(rb-lb))
		v.IntervalLevel = Level
		v.Status = p.cfg.JudgeCanary(d, pval)
		// The z-test's normal approximation is optimistic when a side
		// expects fewer than 5 corrections under the pooled rate (10/202
		// vs 10/810: z-test p 0.0007, Fisher exact 0.0023): too few to
		// roll a canary back on; warn at most.
		pooled := float64(xc+xb) / float64(c.responses+b.responses)
		if v.Status == schemas.StatusBreach && pooled*float64(min(c.responses, b.responses)) < minExpectedCorrections {
			v.Status = schemas.StatusWarn
		}
	}
	v.Details = []schemas.Detail{
		{Name: "canary_corrections", Value: float64(c.corrections)},
		{Name: "canary_responses", Value: float64(c.responses)},
		{Name: "canary_rate", Value: rc},
		{Name: "baseline_corrections", Value: float64(b.corrections)},
		{Name: "baseline_responses", Value: float64(b.responses)},
		{Name: "baseline_rate", Value: rb},
		{Name: "z", Value: z},
		{Name: "p", Value: pval},
	}
	return v
}

// unjoinedVerdict reports the corrections counted under an unjoined key
// in the window: status ok (it is a data-quality signal, not an SLO
// judgement), Value and N the count, Threshold 0, method "count". Details:
// unjoined, pending_overflow (of them, counted because the pending buffer
// was full). ok is false when the window holds none.
func (p *Processor) unjoinedVerdict(k schemas.Key, u *unjoinedState, from, to int64) (schemas.Verdict, bool) {
	var n, over int64
	for _, s := range u.slots {
		if s.start >= from && s.start+p.every <= to {
			n += s.n
			over += s.overflow
		}
	}
	if n == 0 {
		return schemas.Verdict{}, false
	}
	v := p.meta.NewVerdict(Name, MetricUnjoined, k, from, to)
	v.Method = MethodUnjoined
	v.Status = schemas.StatusOK
	v.Value = float64(n)
	v.N = n
	v.Details = []schemas.Detail{
		{Name: "unjoined", Value: float64(n)},
		{Name: "pending_overflow", Value: float64(over)},
	}
	return v, true
}
