package tail

import (
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/nosamples"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// Processor estimates the tail quantile of one latency metric per key. It
// implements processors.Processor; it is not safe for concurrent use (the
// engine calls it from one partition worker's goroutine).
type Processor struct {
	// probes: keys judged on the traffic since a half-open began (SetProbes).
	probes processors.Probes
	meta   processors.Meta
	cfg    Config
	tcfg   stats.TailConfig
	metric string // verdict metric name, e.g. "p999_duration_ms"
	every  int64  // ns
	window int64  // ns

	keys map[schemas.Key]*keyState
	// unsampled holds the keys whose calls matched but carried no value of
	// the metric (see MethodNoSamples).
	unsampled *nosamples.Tracker

	// Scratch reused across evaluations (not state: never snapshotted).
	est     stats.TailEstimator
	samples []window.Sample
	values  []float64
	order   processors.KeyOrder
	sampled map[schemas.Key]bool
	// pool recycles the sample arrays of evicted slots, so that
	// steady-state ObserveSpan does not allocate.
	pool window.Pool

	snapSize snapcodec.SizeHint // the last snapshot's size, for the next one's allocation
}

// keyState is one key's window: slots of Every, capped at
// MaxSamplesPerSlot samples each.
type keyState struct {
	store window.Store
}

// New validates cfg and returns an empty processor. The error is cfg's
// Validate error (a join of *processors.ConfigError naming each bad field).
func New(meta processors.Meta, cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tcfg := stats.TailConfig{
		P:                 cfg.P,
		ThresholdQuantile: cfg.ThresholdQuantile,
		MinExceedances:    cfg.MinExceedances,
		Level:             cfg.Level,
		Interval:          stats.IntervalProfile,
	}
	if err := tcfg.Validate(); err != nil {
		return nil, &processors.ConfigError{Field: "p", Reason: err.Error()}
	}
	return &Processor{
		meta:      meta,
		cfg:       cfg,
		tcfg:      tcfg,
		metric:    MetricName(cfg),
		every:     int64(cfg.Every),
		window:    int64(cfg.Window),
		keys:      make(map[schemas.Key]*keyState),
		unsampled: nosamples.New(int64(cfg.Every), int64(cfg.Window)),
		sampled:   make(map[schemas.Key]bool),
	}, nil
}

// IntervalLevel is the default confidence level of a verdict's [Lower,
// Upper] (Config.Level).
const IntervalLevel = DefaultLevel

// MetricName is the verdict metric, for the p-quantile of the metric: "p"
// followed by p in percent with the decimal point dropped, "_", then the
// metric:
// 0.999 → "p999_duration_ms", 0.99 → "p99_ttft_ms", 0.5 → "p50_tpot_ms",
// 0.9995 → "p9995_duration_ms". Digits come from the shortest decimal form
// of p, so no rounding can change the name.
func MetricName(cfg Config) string {
	p, m := cfg.P, cfg.Metric
	s := strconv.FormatFloat(p, 'f', -1, 64) // "0.999"
	frac, ok := strings.CutPrefix(s, "0.")
	if !ok || frac == "" {
		return "p_" + string(m) // p outside (0,1): Validate rejects it
	}
	for len(frac) < 2 {
		frac += "0"
	}
	digits := strings.TrimLeft(frac, "0") // 0.05 → "5"
	if digits == "" {
		digits = "0"
	}
	return "p" + digits + "_" + string(m)
}

// Interval is Every.
func (p *Processor) Interval() time.Duration { return p.cfg.Every }

// Keys is the number of keys holding samples or calls without the metric.
func (p *Processor) Keys() int { return len(p.keys) + p.unsampled.Len() }

// Hooks: the processor judges probed keys on the traffic since their
// probe's start (SetProbes).
func (p *Processor) Hooks() processors.Hooks { return processors.Hooks{SetProbes: p.SetProbes} }

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

// ObserveSpan adds the span's metric value to key's window. Failed calls
// are skipped unless IncludeErrors. Spans without the metric, or with a
// NaN or infinite value, are not samples: they are counted as calls
// without it (see MethodNoSamples), except a call its span says was not
// streamed under ttft_ms or tpot_ms (processors.Metric.Unsampled).
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	if s.Error && !p.cfg.IncludeErrors {
		return
	}
	v, ok := p.cfg.Metric.FiniteValue(s)
	if !ok {
		if p.cfg.Metric.Unsampled(s) {
			p.unsampled.Observe(key, s)
		}
		return
	}
	ks := p.keys[key]
	if ks == nil {
		ks = &keyState{store: window.Store{SlotWidth: p.every, Cap: p.cfg.MaxSamplesPerSlot}}
		p.keys[key] = ks
	}
	p.pool.Add(&ks.store, window.Sample{T: s.EndUnixNano, V: v, H: processors.SpanHash(s)})
}

// Evaluate emits, in key order, one verdict per key with spans in
// [now-Window, now), then drops the slots no later window needs (those
// ending at or before now+Every-Window) and the keys left empty; then the
// no_samples verdicts of keys whose calls carry no value of the metric
// (evaluateUnsampled).
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	from := now - p.window
	clear(p.sampled)
	for _, k := range processors.SortedKeys(p.keys, &p.order) {
		ks := p.keys[k]
		var n int64
		var rate float64
		kf := p.probes.From(k, from)
		p.samples, n, rate = ks.store.CollectUniform(kf, now, p.samples)
		if n > 0 {
			p.sampled[k] = true
			v := p.meta.NewVerdict(Name, p.metric, k, kf, now)
			p.judge(&v, p.samples, n, rate)
			emit.Verdict(v)
		}
		p.pool.EvictBefore(&ks.store, now+p.every-p.window)
		if ks.store.Empty() {
			delete(p.keys, k)
		}
	}
	if p.unsampled.Len() > 0 {
		p.evaluateUnsampled(now, func(k schemas.Key) bool { return p.sampled[k] }, emit)
	}
}

// SetProbes is the processor's Hooks.SetProbes: a probed key is judged on the
// traffic since its probe's start (see processors.Probes).
func (p *Processor) SetProbes(pr processors.Probes) { p.probes = pr }
