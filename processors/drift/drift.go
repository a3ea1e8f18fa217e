package drift

import (
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/nosamples"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Processor tests each key's distribution of one metric for drift. It
// implements processors.Processor; it is not safe for concurrent use (the
// engine calls it from one partition worker's goroutine).
type Processor struct {
	meta   processors.Meta
	cfg    Config
	metric string // verdict metric name, MetricName(cfg)
	every  int64  // ns, the KS cadence
	step   int64  // ns, the slot width and the processor's interval (Config.slotWidth)
	window int64  // ns, the current window (at least; see MinWindowSamples)
	// span is how much event time before the next KS evaluation the state
	// must cover: Window (canary) or MaxWindow + ReferenceWindow
	// (reference).
	span             int64
	ks, cusum, slice bool // the enabled detectors
	seq              sequential

	keys map[schemas.Key]*keyState
	// unsampled counts the calls without a value of the metric (see
	// processors.MethodNoSamples), per key over the current window.
	unsampled *nosamples.Tracker

	// Scratch reused across evaluations (not state: never snapshotted).
	bufA, bufB []window.Sample
	xs, ys     []float64
	bufC       []window.Sample // the sequential detectors' reference, when capped
	zs         []float64       // and its sorted values
	stepBuf    []window.Sample // the step's samples, in (T, H, V) order
	order      processors.KeyOrder
	jorder     processors.KeyOrder      // the judged keys (judgedKeys)
	judged     map[schemas.Key]struct{} // scratch of judgedKeys
	scopes     []string
	pool       window.Pool // recycles the arrays of evicted slots

	snapSize snapcodec.SizeHint // the last snapshot's size, for the next one's allocation
}

// keyState is one key's window and its k-consecutive counter.
type keyState struct {
	store window.Store
	// consecutive counts the evaluations in a row, up to the last, whose
	// test was significant with an effect of at least MinEffect (canary
	// keys in canary mode; every key in reference mode).
	consecutive int
	// cur and ref cache the sorted values of the current window and (in
	// reference mode) the reference window: derived, never snapshotted.
	// seqRef caches the sequential detectors' reference
	// [m-Window-ReferenceWindow, m-Window), m the last KS evaluation; the
	// KS test shares it while its window has not grown.
	cur, ref, seqRef window.SortedRange
	// hi, lo are the cusum detector's two sides (standard deviations) and
	// bad the slice detector's statistic (nats): part of the snapshot.
	hi, lo, bad float64
}

// New validates cfg and returns an empty processor. The error is cfg's
// Validate error (a join of *processors.ConfigError naming each bad field).
func New(meta processors.Meta, cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	span := int64(cfg.Window)
	if cfg.Mode == ModeReference {
		span = int64(cfg.maxWindow()) + int64(cfg.ReferenceWindow)
	}
	step := int64(cfg.slotWidth())
	return &Processor{
		meta:   meta,
		cfg:    cfg,
		metric: MetricName(cfg),
		every:  int64(cfg.Every),
		step:   step,
		window: int64(cfg.Window),
		span:   span,
		ks:     cfg.has(DetectorKS),
		cusum:  cfg.has(DetectorCUSUM),
		slice:  cfg.has(DetectorSlice),
		seq:    newSequential(cfg),
		keys:   make(map[schemas.Key]*keyState),

		unsampled: nosamples.New(int64(cfg.Every), int64(cfg.Window)),
		judged:    map[schemas.Key]struct{}{},
	}, nil
}

// MetricName is the verdict metric: "ks_<metric>" in reference mode,
// "canary_ks_<metric>" in canary mode (e.g. "ks_confidence",
// "canary_ks_confidence").
func MetricName(cfg Config) string {
	if cfg.Mode == ModeCanary {
		return "canary_ks_" + string(cfg.Metric)
	}
	return "ks_" + string(cfg.Metric)
}

// Interval is Step when a sequential detector runs, else Every.
func (p *Processor) Interval() time.Duration { return time.Duration(p.step) }

// slotCap is the samples kept per slot: MaxSamplesPerSlot per Every,
// rounded up for a slot of Step.
func (p *Processor) slotCap() int {
	return int((int64(p.cfg.MaxSamplesPerSlot)*p.step + p.every - 1) / p.every)
}

// Keys is the number of keys holding values, or calls without one.
func (p *Processor) Keys() int { return len(p.keys) + p.unsampled.Len() }

// Hooks is the zero Hooks: the processor has no relay with the others.
func (p *Processor) Hooks() processors.Hooks { return processors.Hooks{} }

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

// ObserveSpan adds the span's metric value to key's window. In canary
// mode spans whose variant is neither CanaryVariant nor BaselineVariant
// are skipped; failed calls are skipped on a latency metric unless
// IncludeErrors. Spans without the metric, or with a NaN or infinite
// value, are no values: they are counted as calls without it (see
// processors.MethodNoSamples), except a call its span says was not
// streamed under ttft_ms or tpot_ms (processors.Metric.Unsampled).
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	if p.cfg.Mode == ModeCanary && key.Variant != p.cfg.CanaryVariant && key.Variant != p.cfg.BaselineVariant {
		return
	}
	if s.Error && !p.cfg.IncludeErrors && p.cfg.Metric.Latency() {
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
		ks = &keyState{store: window.Store{SlotWidth: p.step, Cap: p.slotCap()}}
		p.keys[key] = ks
	}
	p.pool.Add(&ks.store, window.Sample{T: s.EndUnixNano, V: v, H: processors.SpanHash(s)})
}

// Evaluate emits, in key order, one verdict per key (reference mode) or per
// canary key (canary mode) with data in the windows it compares, or a
// no_samples verdict in its place while the key is blind (see
// Config.NoSamplesEvaluations), updates the k-consecutive counters, then
// drops the slots no later evaluation needs and the keys left empty.
//
// With a sequential detector the processor is evaluated every Step: at a
// multiple of Every the KS test and the sequential detectors run (per
// key, in that order), in between only the sequential detectors.
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	full := mod(now, p.every) == 0
	switch {
	case !full:
		p.evaluateSequential(now, emit)
	case p.cfg.Mode == ModeCanary:
		p.evaluateCanary(now, p.judgedKeys(), emit)
	default:
		p.evaluateReference(now, p.judgedKeys(), emit)
	}
	if full {
		p.unsampled.Evict(now)
	}
	keys := processors.SortedKeys(p.keys, &p.order)
	// What the next KS evaluation needs (the sequential detectors' windows
	// lie inside it).
	cut := now - mod(now, p.every) + p.every - p.span
	for _, k := range keys {
		ks := p.keys[k]
		p.pool.EvictBefore(&ks.store, cut)
		if ks.store.Empty() {
			delete(p.keys, k)
		}
	}
}

// mod is x mod m in [0, m), for negative x too.
func mod(x, m int64) int64 {
	r := x % m
	if r < 0 {
		r += m
	}
	return r
}

// currentFrom is the start of key's KS current window at now:
// now-Window, grown by Every while it holds fewer than MinWindowSamples
// values, to now-MaxWindow at most.
func (p *Processor) currentFrom(st *window.Store, now int64) int64 {
	from := now - p.window
	limit := now - int64(p.cfg.maxWindow())
	need := int64(p.cfg.MinWindowSamples)
	n := st.Count(from, now)
	for n < need && from > limit {
		n += st.Count(from-p.every, from)
		from -= p.every
	}
	return from
}

// evaluateReference compares each key's current window [from, now)
// (currentFrom) with its [from-ReferenceWindow, from), or says it is
// blind; then runs the sequential detectors of the key.
func (p *Processor) evaluateReference(now int64, keys []schemas.Key, emit processors.Emitter) {
	for _, k := range keys {
		ks := p.keys[k]
		curFrom := now - p.window
		var xs, ys []float64
		if ks != nil {
			curFrom = p.currentFrom(&ks.store, now)
			refFrom := curFrom - int64(p.cfg.ReferenceWindow)
			if curFrom == now-p.window && p.sequentialOn() {
				// The reference of the sequential detectors: one cache.
				xs, ys = p.sides(&ks.store, &ks.cur, curFrom, now, &ks.store, &ks.seqRef, refFrom, curFrom)
			} else {
				xs, ys = p.sides(&ks.store, &ks.cur, curFrom, now, &ks.store, &ks.ref, refFrom, curFrom)
			}
		}
		var calls int64
		scopes := p.scopes[:0]
		if len(xs) == 0 {
			if calls = p.unsampled.Calls(k, now); calls > 0 {
				scopes = p.unsampled.Scopes(scopes, k)
			}
		}
		p.scopes = scopes
		if p.blind(k, calls, scopes, curFrom, now, emit) || ks == nil {
			if ks != nil {
				ks.consecutive = 0
			}
			continue
		}
		if len(xs)+len(ys) == 0 {
			ks.consecutive = 0
			continue
		}
		if p.ks {
			v := p.meta.NewVerdict(Name, p.metric, k, curFrom, now)
			p.judge(&v, ks, xs, ys, false)
			v.Details = append(v.Details, schemas.Detail{Name: DetailWindowSeconds, Value: float64(now-curFrom) / 1e9})
			emit.Verdict(v)
		}
		p.sequentialKey(k, ks, now, emit)
	}
}

// sides returns the sorted values of a's [aFrom, aTo) and of b's
// [bFrom, bTo) (b nil: none), from the caches ac and bc when they hold
// them, else by CollectUniform.
func (p *Processor) sides(a *window.Store, ac *window.SortedRange, aFrom, aTo int64, b *window.Store, bc *window.SortedRange, bFrom, bTo int64) (xs, ys []float64) {
	xs, ok := ac.Values(a, aFrom, aTo)
	if ok && b != nil {
		ys, ok = bc.Values(b, bFrom, bTo)
	}
	if ok {
		return xs, ys
	}
	p.bufA, _, _ = a.CollectUniform(aFrom, aTo, p.bufA)
	p.bufB = p.bufB[:0]
	if b != nil {
		p.bufB, _, _ = b.CollectUniform(bFrom, bTo, p.bufB)
	}
	p.xs = sortedValues(p.xs, p.bufA)
	p.ys = sortedValues(p.ys, p.bufB)
	return p.xs, p.ys
}

// evaluateCanary compares each canary key's [now-Window, now) with the same
// window of its baseline key (the key with Variant = BaselineVariant), or
// says it is blind.
func (p *Processor) evaluateCanary(now int64, keys []schemas.Key, emit processors.Emitter) {
	from := now - p.window
	for _, k := range keys {
		ks := p.keys[k]
		base := k
		base.Variant = p.cfg.BaselineVariant
		bs := p.keys[base]
		var xs, ys []float64
		if ks != nil {
			var bstore *window.Store
			var bcache *window.SortedRange
			if bs != nil {
				bstore, bcache = &bs.store, &bs.cur
			}
			xs, ys = p.sides(&ks.store, &ks.cur, from, now, bstore, bcache, from, now)
		} else if bs != nil {
			// Only the baseline's emptiness matters here.
			ys, _ = p.sides(&bs.store, &bs.cur, from, now, nil, nil, 0, 0)
		}
		// The canary is blind when its calls carry no value; so is what it
		// is compared with, when the canary has traffic and the baseline's
		// calls carry none.
		var calls int64
		scopes := p.scopes[:0]
		if len(xs) == 0 {
			if c := p.unsampled.Calls(k, now); c > 0 {
				calls += c
				scopes = p.unsampled.Scopes(scopes, k)
			}
		}
		if len(ys) == 0 && (len(xs) > 0 || calls > 0) {
			if c := p.unsampled.Calls(base, now); c > 0 {
				calls += c
				scopes = p.unsampled.Scopes(scopes, base)
			}
		}
		p.scopes = scopes
		if p.blind(k, calls, scopes, from, now, emit) || ks == nil || len(xs) == 0 {
			if ks != nil {
				ks.consecutive = 0
			}
			continue
		}
		v := p.meta.NewVerdict(Name, p.metric, k, from, now)
		p.judge(&v, ks, xs, ys, true)
		emit.Verdict(v)
	}
}

// blind advances k's run of blind evaluations (calls > 0: calls without
// a value of the metric where a side has none) and, from the
// NoSamplesEvaluations-th in a row on, emits the no_samples verdict of k
// and reports true: k gets no verdict of its own at this evaluation.
func (p *Processor) blind(k schemas.Key, calls int64, scopes []string, from, now int64, emit processors.Emitter) bool {
	run := p.unsampled.Advance(k, calls > 0)
	need := p.cfg.NoSamplesEvaluations
	if calls == 0 || run < int64(need) {
		return false
	}
	v := p.meta.NewVerdict(Name, p.metric, k, from, now)
	nosamples.Fill(&v, nosamples.Blind{Key: k, Calls: calls, Evaluations: run, Scopes: scopes}, need)
	v.Threshold = p.cfg.EffectiveMinEffect()
	emit.Verdict(v)
	return true
}

// judgedKeys lists, in Key.String order, the keys that may get a
// verdict: every key with values or calls without one (reference mode),
// the canary keys among them (canary mode).
func (p *Processor) judgedKeys() []schemas.Key {
	clear(p.judged)
	canary := p.cfg.Mode == ModeCanary
	for k := range p.keys {
		if !canary || k.Variant == p.cfg.CanaryVariant {
			p.judged[k] = struct{}{}
		}
	}
	for _, k := range p.unsampled.Keys() {
		if !canary || k.Variant == p.cfg.CanaryVariant {
			p.judged[k] = struct{}{}
		}
	}
	return processors.SortedKeys(p.judged, &p.jorder)
}
