package drift

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// scoreStream is one key's per-call confidence score, the case:
// calls arrive as a Poisson process at perMin calls per minute (times
// rateAt(t), 1 when nil), each with score clamp(mean(t) + 0.1·N(0,1), 0,
// 1) — mean 0.75, sd 0.1 before any change — and a change from changeAt
// on (change nil: clean).
type scoreStream struct {
	seed     uint64
	perMin   float64
	rateAt   func(t time.Duration) float64 // rate multiplier, nil: 1
	meanAt   func(t time.Duration) float64 // clean mean, nil: 0.75
	change   change
	changeAt time.Duration
}

// change rewrites one score drawn at t (since the change) with r.
type change func(r *rand.Rand, since time.Duration, score float64) float64

// The changes of the study (score sd 0.1).
var (
	meanShift = func(d float64) change {
		return func(_ *rand.Rand, _ time.Duration, x float64) float64 { return x + d }
	}
	// slowDecline: the mean falls linearly by total over span.
	slowDecline = func(total float64, span time.Duration) change {
		return func(_ *rand.Rand, since time.Duration, x float64) float64 {
			return x + total*min(1, float64(since)/float64(span))
		}
	}
	// badSlice: a share of the calls drop to N(0.3, 0.05), the rest unchanged.
	badSlice = func(share float64) change {
		return func(r *rand.Rand, _ time.Duration, x float64) float64 {
			if r.Float64() < share {
				return 0.3 + 0.05*r.NormFloat64()
			}
			return x
		}
	}
	// varianceUp: the same mean, sd times factor.
	varianceUp = func(factor float64) change {
		return func(_ *rand.Rand, _ time.Duration, x float64) float64 { return 0.75 + (x-0.75)*factor }
	}
)

// dailyCycle is the non-stationary clean traffic's rate: a daily cycle
// from 10% at 03:00 to 100% at 15:00, with a 10-minute burst of 4× every
// 3 h 10 min (bursts land at every hour of the day over the days).
func dailyCycle(t time.Duration) float64 {
	h := math.Mod(t.Hours(), 24)
	r := 0.55 - 0.45*math.Cos(2*math.Pi*(h-3)/24)
	if math.Mod(t.Minutes(), 190) < 10 {
		r *= 4
	}
	return r
}

// dailyMean is the non-stationary clean traffic's mean score: ±0.02 over
// the day (a different mix of users at night), no incident.
func dailyMean(t time.Duration) float64 {
	return 0.75 + 0.02*math.Sin(2*math.Pi*t.Hours()/24)
}

var scoreKey = schemas.Key{Tenant: "acme", Service: "chat", Model: "m"}

// run streams duration of s through p, evaluating at every interval, and
// calls verdict on each verdict; it stops after the evaluation in which
// verdict returned true. Deterministic in s.seed.
func (s scoreStream) run(p *Processor, duration time.Duration, verdict func(v *schemas.Verdict) bool) {
	r := rand.New(rand.NewPCG(s.seed, 0x5c0e))
	step := int64(p.Interval())
	stop := false
	em := emitFunc(func(v *schemas.Verdict) { stop = verdict(v) || stop })
	var id uint64
	t := 0.0 // ns since t0, the next arrival
	peak := s.perMin
	if s.rateAt != nil {
		peak *= 4 // dailyCycle's most: thinning below
	}
	gap := func() float64 { return r.ExpFloat64() / peak * float64(time.Minute) }
	t = gap()
	var span schemas.Span
	for b := step; b <= int64(duration); b += step {
		for ; t < float64(b); t += gap() {
			at := time.Duration(t)
			if s.rateAt != nil && r.Float64()*4 >= s.rateAt(at) {
				continue
			}
			mean := 0.75
			if s.meanAt != nil {
				mean = s.meanAt(at)
			}
			x := mean + 0.1*r.NormFloat64()
			if s.change != nil && at >= s.changeAt {
				x = s.change(r, at-s.changeAt, x)
			}
			id++
			span = schemas.Span{Key: scoreKey, EndUnixNano: t0 + int64(t), Confidence: min(1, max(0, x)), Has: schemas.HasConfidence}
			binary.LittleEndian.PutUint64(span.TraceID[:8], id)
			binary.LittleEndian.PutUint64(span.SpanID[:], id*0x9e3779b97f4a7c15)
			p.ObserveSpan(scoreKey, &span)
		}
		p.Evaluate(t0+b, em)
		if stop {
			return
		}
	}
}

type emitFunc func(v *schemas.Verdict)

func (f emitFunc) Verdict(v schemas.Verdict) { f(&v) }
func (emitFunc) Rollup(schemas.Rollup)       {}

// outcome is one run: the first breach after the change (delay from the
// change to the verdict's window end, by metric and of any), and the
// breach episodes before it (false alarms), by metric.
type outcome struct {
	delay   time.Duration // -1: none
	by      map[string]time.Duration
	falseEp map[string]int
}

// detect runs s (change at s.changeAt) for until and reports the outcome.
func detect(cfg Config, s scoreStream, until time.Duration) outcome {
	p, err := New(processors.Meta{SLO: "study", ConfigVersion: "v1"}, cfg)
	if err != nil {
		panic(err)
	}
	o := outcome{delay: -1, by: map[string]time.Duration{}, falseEp: map[string]int{}}
	last := map[string]bool{} // the metric's previous verdict was a breach
	s.run(p, until, func(v *schemas.Verdict) bool {
		end := time.Duration(v.WindowEndUnixNano - t0)
		breach := v.Status == schemas.StatusBreach
		if s.change == nil || end <= s.changeAt {
			if breach && !last[v.Metric] {
				o.falseEp[v.Metric]++
			}
		} else if breach {
			if _, ok := o.by[v.Metric]; !ok {
				o.by[v.Metric] = end - s.changeAt
			}
			if o.delay < 0 {
				o.delay = end - s.changeAt
			}
		}
		last[v.Metric] = breach
		return o.delay >= 0 // detected: the rest of the run says nothing
	})
	return o
}

// median of ds (-1 entries are misses, sorted last); -1 when half miss.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.SortFunc(s, func(a, b time.Duration) int {
		switch {
		case a == b:
			return 0
		case a < 0:
			return 1
		case b < 0:
			return -1
		case a < b:
			return -1
		}
		return 1
	})
	return s[(len(s)-1)/2]
}
