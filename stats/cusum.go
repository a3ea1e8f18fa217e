package stats

import "math"

// BernoulliCUSUM is the one-sided CUSUM of a Bernoulli rate (Page 1954;
// for Bernoulli data Reynolds & Stoumbos 1999): the log-likelihood ratio of
// an in-control rate P0 against an out-of-control rate P1 > P0,
// accumulated and floored at 0,
//
//	S_0 = 0,  S_t = max(0, S_{t-1} + bad_t·WBad + good_t·WGood),
//	WBad  = ln(P1/P0)             > 0  (nats per bad event),
//	WGood = ln((1-P1)/(1-P0))     < 0  (nats per good event),
//
// where bad_t and good_t are the counts of evaluation t (a batch: the
// statistic does not depend on the order of the events within it). An
// alarm is S_t >= h (nats).
//
// False alarms. exp of a batch's increment is its likelihood ratio, whose
// mean is 1 when the true rate is P0 and below 1 when it is lower; so from
// any t with S_t = 0 the walk reaches h with probability at most e^-h
// (Ville's inequality on the likelihood-ratio martingale). Each alarm
// episode starts from such a t, at most one per evaluation: at most
// E·e^-h false alarm episodes in E evaluations, whatever the traffic
// volume, whenever the rate is at most P0 (FalseAlarmBound, ThresholdFor).
//
// Detection. At a true rate p the mean increment per event is
// p·WBad + (1-p)·WGood; it is positive once p > p* = -WGood/(WBad-WGood)
// (between P0 and P1), and the delay is about h over that drift
// (events, not evaluations).
type BernoulliCUSUM struct {
	P0, P1      float64
	WBad, WGood float64
}

// NewBernoulliCUSUM returns the CUSUM of p1 against p0. Errors (wrapping
// ErrInvalidParameter): p0 not in (0, 1), p1 not in (p0, 1).
func NewBernoulliCUSUM(p0, p1 float64) (BernoulliCUSUM, error) {
	if !(p0 > 0 && p0 < 1) {
		return BernoulliCUSUM{}, errf(ErrInvalidParameter, "CUSUM in-control rate p0=%v: must be in (0, 1)", p0)
	}
	if !(p1 > p0 && p1 < 1) {
		return BernoulliCUSUM{}, errf(ErrInvalidParameter, "CUSUM out-of-control rate p1=%v: must be in (p0=%v, 1)", p1, p0)
	}
	return BernoulliCUSUM{P0: p0, P1: p1, WBad: math.Log(p1 / p0), WGood: math.Log1p(-p1) - math.Log1p(-p0)}, nil
}

// Step returns max(0, s + bad·WBad + good·WGood): s after one evaluation
// with bad and good events (counts, non-negative).
func (c BernoulliCUSUM) Step(s, bad, good float64) float64 {
	return max(0, s+bad*c.WBad+good*c.WGood)
}

// Crossover is p* = -WGood/(WBad-WGood), the rate above which the
// statistic drifts upwards (an alarm follows, given time) and below which
// it drifts to 0.
func (c BernoulliCUSUM) Crossover() float64 {
	return -c.WGood / (c.WBad - c.WGood)
}

// FalseAlarmBound is E·e^-h: the most false alarm episodes a CUSUM with
// threshold h (nats) raises in E evaluations when the rate is at most P0.
func FalseAlarmBound(h, evaluations float64) float64 {
	return evaluations * math.Exp(-h)
}

// ThresholdFor is ln(E/a), the threshold h (nats) at which
// FalseAlarmBound(h, E) = a: E evaluations per unit of time (say a
// key-day), a false alarms allowed in it. Errors (ErrInvalidParameter):
// E or a not positive and finite.
func ThresholdFor(evaluations, alarms float64) (float64, error) {
	if !(evaluations > 0) || math.IsInf(evaluations, 0) || !(alarms > 0) || math.IsInf(alarms, 0) {
		return 0, errf(ErrInvalidParameter, "CUSUM threshold for %v evaluations and %v alarms: both must be positive and finite", evaluations, alarms)
	}
	return math.Log(evaluations / alarms), nil
}
