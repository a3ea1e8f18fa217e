// Package decay watches the trend of a quality score (alignment or
// confidence) per key: is it sliding down, by how much over the window, and
// is the slide real?
//
// Over the window [now-Window, now), with t the event time in hours since
// the window start and y the score:
//
//   - OLS of y on t (stats.OLS, as scipy.stats.linregress): slope b in
//     score units per hour, its standard error and the two-sided p-value of
//     b = 0 (Student's t, n-2 degrees of freedom), on every kept score;
//   - Theil–Sen (stats.TheilSen, as scipy.stats.theilslopes): the median
//     pairwise slope with its 95% bounds, on at most TheilSenMaxPoints
//     scores (the smallest span-id hashes: a uniform subsample independent
//     of arrival order);
//   - the exponential decay rate lambda (per hour) of y = y0·exp(-lambda·t),
//     from OLS of log(y) on t over the scores > 0 (scores of exactly 0 are
//     excluded and counted in the zero_scores detail).
//
// The decline is the OLS slope times the window span in hours (the score
// lost over one window if the trend holds), with its 95% interval
// decline ± t(0.975, n-2)·se·span. OLS is the headline because it answers
// fast: a slide that started a few minutes ago moves the least-squares
// slope (the newest points have the most leverage) well before it moves
// the median pairwise slope. Theil–Sen is the robustness check: a burst of
// garbage scores (a scorer writing 0s) moves OLS but not the median slope,
// so a breach needs both to agree (see Config.Judge).
//
// Verdicts: metric "decline_" + the score ("decline_alignment",
// "decline_confidence"), method "ols+theil_sen", Value the decline,
// Threshold Limit, interval at 0.95; Details ols_slope_per_h, ols_se,
// ols_p, theil_slope_per_h, theil_low, theil_high (score units per hour),
// theil_decline, theil_n (points in the Theil–Sen fit), lambda_per_h,
// lambda_n (scores in the log fit; 0 when it could not be fitted and then
// lambda_per_h is 0), zero_scores, span_h, coverage (the share of the
// window the scores span), n (scores fitted), n_window (scores in the
// window, kept or not).
//
// Too little to judge gives insufficient_data with Value 0: fewer than
// MinSamples scores (method "ols+theil_sen"), scores spanning less than
// MinCoverage of the window (method "short_span": a slope fitted on a few
// minutes and extrapolated to the window is mostly noise), or all scores at
// one instant (method "degenerate_times").
//
// Spans without a score are counted per key and slot of Every
// (processors/internal/nosamples): a key whose window holds such calls and
// no score for NoSamplesEvaluations evaluations in a row (default 5) gets,
// at each evaluation while that lasts, a verdict of status
// insufficient_data, method "no_samples", N 0, details calls, evaluations
// and no_samples_evaluations, and Evidence.Scopes naming the
// instrumentation scopes of those calls: the SLO is blind there, and says
// so.
//
// Memory per key: (Window/Every + 1) slots of at most MaxSamplesPerSlot
// scores of 24 bytes: 13 × 200 × 24 ≈ 62 KB with the defaults under heavy
// traffic.
package decay

import (
	"cmp"
	"errors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/nosamples"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// Method is the verdict method.
const Method = "ols+theil_sen"

// MethodShortSpan labels an insufficient_data verdict whose scores span
// less than MinCoverage of the window.
const MethodShortSpan = "short_span"

// MethodDegenerate labels an insufficient_data verdict whose scores all
// share one event time, so no slope exists.
const MethodDegenerate = "degenerate_times"

// Level is the confidence level of the decline's interval and of the
// Theil–Sen bounds.
const Level = 0.95

const nsPerHour = float64(time.Hour)

// Processor is the decay processor of one SLO in one partition worker.
type Processor struct {
	// probes: keys judged on the traffic since a half-open began (SetProbes).
	probes processors.Probes
	meta   processors.Meta
	cfg    Config
	metric string
	every  int64
	win    int64
	spanH  float64 // Window in hours
	keys   map[schemas.Key]*window.Store
	// unsampled counts the calls without a score (see
	// processors.MethodNoSamples).
	unsampled *nosamples.Tracker

	// scratch reused across evaluations
	samples []window.Sample
	thin    []window.Sample
	t, y    []float64
	lt, ly  []float64
	order   processors.KeyOrder
	sampled map[schemas.Key]bool

	snapSize snapcodec.SizeHint // the last snapshot's size, for the next one's allocation
}

// MetricName is the verdict metric: "decline_<metric>", e.g.
// "decline_alignment".
func MetricName(cfg Config) string { return "decline_" + string(cfg.Metric) }

// New validates cfg and returns an empty processor.
func New(meta processors.Meta, cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Processor{
		meta:   meta,
		cfg:    cfg,
		metric: MetricName(cfg),
		every:  int64(cfg.Every),
		win:    int64(cfg.Window),
		spanH:  float64(cfg.Window) / nsPerHour,
		keys:   map[schemas.Key]*window.Store{},

		unsampled: nosamples.New(int64(cfg.Every), int64(cfg.Window)),
		sampled:   map[schemas.Key]bool{},
	}, nil
}

// Interval is Config.Every.
func (p *Processor) Interval() time.Duration { return p.cfg.Every }

// Keys is the number of keys holding scores or calls without one.
func (p *Processor) Keys() int { return len(p.keys) + p.unsampled.Len() }

// Hooks: the processor judges probed keys on the traffic since their
// probe's start (SetProbes).
func (p *Processor) Hooks() processors.Hooks { return processors.Hooks{SetProbes: p.SetProbes} }

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

// ObserveSpan keeps the span's score. A span without one is no score: it
// is counted as a call without it (see processors.MethodNoSamples). It
// does not allocate once the key's current slot is full.
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	v, ok := p.cfg.Metric.Value(s)
	if !ok {
		p.unsampled.Observe(key, s)
		return
	}
	st := p.keys[key]
	if st == nil {
		st, _ = window.New(p.every, p.cfg.MaxSamplesPerSlot)
		p.keys[key] = st
	}
	st.Add(window.Sample{T: s.EndUnixNano, V: v, H: processors.SpanHash(s)})
}

// Evaluate judges every key with scores in [now-Window, now), in key
// order, then drops the slots no later window needs; then it emits the
// no_samples verdicts of the keys whose window holds calls without a
// score and no score, for NoSamplesEvaluations evaluations in a row.
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	from := now - p.win
	clear(p.sampled)
	for _, k := range processors.SortedKeys(p.keys, &p.order) {
		st := p.keys[k]
		var total int64
		kf := p.probes.From(k, from)
		p.samples, total = st.Collect(kf, now, p.samples[:0])
		if total > 0 {
			p.sampled[k] = true
			emit.Verdict(p.judge(k, kf, now, total))
		}
		st.EvictBefore(now + p.every - p.win)
		if st.Empty() {
			delete(p.keys, k)
		}
	}
	if p.unsampled.Len() > 0 {
		need := p.cfg.NoSamplesEvaluations
		p.unsampled.Evaluate(now, need, func(k schemas.Key) bool { return p.sampled[k] }, func(b nosamples.Blind) {
			v := p.meta.NewVerdict(Name, p.metric, b.Key, from, now)
			nosamples.Fill(&v, b, need)
			v.Threshold = p.cfg.Limit
			emit.Verdict(v)
		})
	}
}

// judge fits the trend of p.samples (the window's kept scores in canonical
// order) and builds the verdict.
func (p *Processor) judge(k schemas.Key, from, to, total int64) schemas.Verdict {
	v := p.meta.NewVerdict(Name, p.metric, k, from, to)
	v.Threshold = p.cfg.Limit
	v.Method = Method
	n := len(p.samples)
	v.N = int64(n)
	coverage := 0.0
	if n > 0 {
		coverage = float64(p.samples[n-1].T-p.samples[0].T) / float64(p.win)
	}
	insufficient := func(method string) schemas.Verdict {
		v.Status = schemas.StatusInsufficientData
		v.Method = method
		v.Details = []schemas.Detail{
			{Name: "min_samples", Value: float64(p.cfg.MinSamples)},
			{Name: "coverage", Value: coverage},
			{Name: "n", Value: float64(n)},
			{Name: "n_window", Value: float64(total)},
		}
		return v
	}
	if n < p.cfg.MinSamples {
		return insufficient(Method)
	}
	if coverage < p.cfg.MinCoverage {
		return insufficient(MethodShortSpan)
	}
	p.t, p.y = hoursAndValues(p.samples, from, p.t[:0], p.y[:0])
	ols, err := stats.OLS(p.t, p.y)
	if err != nil {
		// Only ErrDegenerate is possible here: n >= 3 finite points.
		return insufficient(MethodDegenerate)
	}
	thin := p.samples
	if n > p.cfg.TheilSenMaxPoints {
		p.thin = thinByHash(p.samples, p.cfg.TheilSenMaxPoints, p.thin[:0])
		thin = p.thin
	}
	p.lt, p.ly = hoursAndValues(thin, from, p.lt[:0], p.ly[:0])
	ts, err := stats.TheilSen(p.lt, p.ly, Level)
	if err != nil {
		return insufficient(MethodDegenerate)
	}
	lambda, lambdaN, zeros := p.decayRate(from)

	t975, err := stats.StudentTQuantile(0.975, float64(n-2)) // n >= MinSamples >= 3
	if err != nil {
		return insufficient(MethodDegenerate)
	}
	decline := ols.Slope * p.spanH
	half := t975 * ols.StdErr * p.spanH
	v.Value = decline
	v.Lower, v.Upper, v.IntervalLevel = decline-half, decline+half, Level
	v.Status = p.cfg.Judge(decline, ols.P, ts.High)
	v.Details = []schemas.Detail{
		{Name: "ols_slope_per_h", Value: ols.Slope},
		{Name: "ols_se", Value: ols.StdErr},
		{Name: "ols_p", Value: ols.P},
		{Name: "theil_decline", Value: ts.Slope * p.spanH},
		{Name: "theil_slope_per_h", Value: ts.Slope},
		{Name: "theil_low", Value: ts.Low},
		{Name: "theil_high", Value: ts.High},
		{Name: "theil_n", Value: float64(ts.N)},
		{Name: "lambda_per_h", Value: lambda},
		{Name: "lambda_n", Value: float64(lambdaN)},
		{Name: "zero_scores", Value: float64(zeros)},
		{Name: "span_h", Value: p.spanH},
		{Name: "coverage", Value: coverage},
		{Name: "n", Value: float64(n)},
		{Name: "n_window", Value: float64(total)},
	}
	return v
}

// decayRate fits log(score) on hours over the positive scores of
// p.samples: lambda = -slope per hour (positive when the score decays).
// lambdaN is 0 (and lambda 0) when fewer than 3 scores are positive or
// their times are all equal.
func (p *Processor) decayRate(from int64) (lambda float64, lambdaN, zeros int) {
	p.lt, p.ly = p.lt[:0], p.ly[:0]
	for _, x := range p.samples {
		if x.V > 0 {
			p.lt = append(p.lt, float64(x.T-from)/nsPerHour)
			p.ly = append(p.ly, x.V)
		} else {
			zeros++
		}
	}
	if len(p.ly) < 3 {
		return 0, 0, zeros
	}
	fit, err := stats.LogLinear(p.lt, p.ly)
	if err != nil {
		return 0, 0, zeros
	}
	// + 0 turns a -0 into 0, so a flat fit reads lambda_per_h=0.
	return -fit.Slope + 0, len(p.ly), zeros
}

// Judge turns a decline (score units over the window), the OLS p-value and
// the Theil–Sen upper slope bound into a status. The decline is
// significant when p < Alpha and the Theil–Sen upper bound is below 0 (both
// methods agree the score is falling). Then:
//
//	decline < Limit,   significant      breach
//	decline < Limit,   not significant  warn  (large but noisy: look)
//	decline < Limit/2, significant      warn  (a real slide, half the limit)
//	otherwise                           ok
func (c *Config) Judge(decline, olsP, theilHigh float64) schemas.Status {
	significant := olsP < c.Alpha && theilHigh < 0
	switch {
	case decline < c.Limit && significant:
		return schemas.StatusBreach
	case decline < c.Limit:
		return schemas.StatusWarn
	case decline < c.Limit/2 && significant:
		return schemas.StatusWarn
	}
	return schemas.StatusOK
}

// hoursAndValues appends to t the event times of xs in hours since from and
// to y their values.
func hoursAndValues(xs []window.Sample, from int64, t, y []float64) ([]float64, []float64) {
	for _, x := range xs {
		t = append(t, float64(x.T-from)/nsPerHour)
		y = append(y, x.V)
	}
	return t, y
}

// thinByHash appends to dst the k samples of xs with the smallest hashes,
// in canonical (T, H, V) order.
func thinByHash(xs []window.Sample, k int, dst []window.Sample) []window.Sample {
	dst = append(dst, xs...)
	// The k smallest by (H, T, V), a total order on distinct samples, by
	// selection (O(n)) rather than a sort: the set is the same.
	selectSmallest(dst, k, func(a, b window.Sample) int {
		if c := cmp.Compare(a.H, b.H); c != 0 {
			return c
		}
		if c := cmp.Compare(a.T, b.T); c != 0 {
			return c
		}
		return window.CompareSamples(a, b) // equal T and H: by V
	})
	dst = dst[:k]
	slices.SortFunc(dst, window.CompareSamples)
	return dst
}

// ErrCorrupt is wrapped by every UnmarshalBinary error (with
// snapcodec.ErrDamaged and a message saying what is wrong and where).
var ErrCorrupt = errors.New("decay: corrupt snapshot")

// Processor implements processors.Processor.
var _ processors.Processor = (*Processor)(nil)

// SetProbes is the processor's Hooks.SetProbes: a probed key is judged on the
// traffic since its probe's start (see processors.Probes).
func (p *Processor) SetProbes(pr processors.Probes) { p.probes = pr }

// selectSmallest reorders xs so that its first k elements are the k
// smallest under cmp (in no particular order): Hoare selection with a
// median-of-three pivot, O(len(xs)) expected.
func selectSmallest(xs []window.Sample, k int, cmp func(a, b window.Sample) int) {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if cmp(xs[mid], xs[lo]) < 0 {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if cmp(xs[hi], xs[lo]) < 0 {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if cmp(xs[hi], xs[mid]) < 0 {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		pivot := xs[mid]
		i, j := lo, hi
		for i <= j {
			for cmp(xs[i], pivot) < 0 {
				i++
			}
			for cmp(xs[j], pivot) > 0 {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		// [lo, j] <= pivot <= [i, hi]
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
}
