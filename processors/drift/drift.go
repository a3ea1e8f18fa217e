package drift

import (
	"time"

	"github.com/fusebox-dev/fusebox/processors"
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
	every  int64  // ns
	window int64  // ns, the current window
	// span is how much event time before now the state must cover: Window
	// (canary) or Window + ReferenceWindow (reference).
	span int64

	keys map[schemas.Key]*keyState

	// Scratch reused across evaluations (not state: never snapshotted).
	bufA, bufB []window.Sample
	xs, ys     []float64
	order      processors.KeyOrder
	pool       window.Pool // recycles the arrays of evicted slots
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
	cur, ref window.SortedRange
}

// New validates cfg and returns an empty processor. The error is cfg's
// Validate error (a join of *processors.ConfigError naming each bad field).
func New(meta processors.Meta, cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	span := int64(cfg.Window)
	if cfg.Mode == ModeReference {
		span += int64(cfg.ReferenceWindow)
	}
	return &Processor{
		meta:   meta,
		cfg:    cfg,
		metric: MetricName(cfg),
		every:  int64(cfg.Every),
		window: int64(cfg.Window),
		span:   span,
		keys:   make(map[schemas.Key]*keyState),
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

// Interval is Every.
func (p *Processor) Interval() time.Duration { return p.cfg.Every }

// Keys is the number of keys holding state.
func (p *Processor) Keys() int { return len(p.keys) }

// Hooks is the zero Hooks: the processor has no relay with the others.
func (p *Processor) Hooks() processors.Hooks { return processors.Hooks{} }

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

// ObserveSpan adds the span's metric value to key's window. Spans without
// the metric or with a NaN or infinite value are skipped; in canary mode,
// so are spans whose variant is neither CanaryVariant nor BaselineVariant;
// failed calls are skipped on a latency metric unless IncludeErrors.
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	if p.cfg.Mode == ModeCanary && key.Variant != p.cfg.CanaryVariant && key.Variant != p.cfg.BaselineVariant {
		return
	}
	if s.Error && !p.cfg.IncludeErrors && p.cfg.Metric.Latency() {
		return
	}
	v, ok := p.cfg.Metric.FiniteValue(s)
	if !ok {
		return
	}
	ks := p.keys[key]
	if ks == nil {
		ks = &keyState{store: window.Store{SlotWidth: p.every, Cap: p.cfg.MaxSamplesPerSlot}}
		p.keys[key] = ks
	}
	p.pool.Add(&ks.store, window.Sample{T: s.EndUnixNano, V: v, H: processors.SpanHash(s)})
}

// Evaluate emits, in key order, one verdict per key (reference mode) or per
// canary key (canary mode) with data in the windows it compares, updates
// the k-consecutive counters, then drops the slots no later evaluation
// needs and the keys left empty.
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	keys := processors.SortedKeys(p.keys, &p.order)
	if p.cfg.Mode == ModeCanary {
		p.evaluateCanary(now, keys, emit)
	} else {
		p.evaluateReference(now, keys, emit)
	}
	cut := now + p.every - p.span
	for _, k := range keys {
		ks := p.keys[k]
		p.pool.EvictBefore(&ks.store, cut)
		if ks.store.Empty() {
			delete(p.keys, k)
		}
	}
}

// evaluateReference compares each key's [now-Window, now) with its
// [now-Window-ReferenceWindow, now-Window).
func (p *Processor) evaluateReference(now int64, keys []schemas.Key, emit processors.Emitter) {
	curFrom := now - p.window
	refFrom := curFrom - int64(p.cfg.ReferenceWindow)
	for _, k := range keys {
		ks := p.keys[k]
		xs, okCur := ks.cur.Values(&ks.store, curFrom, now)
		ys, okRef := ks.ref.Values(&ks.store, refFrom, curFrom)
		if !okCur || !okRef {
			var nCur, nRef int64
			p.bufA, nCur, _ = ks.store.CollectUniform(curFrom, now, p.bufA)
			p.bufB, nRef, _ = ks.store.CollectUniform(refFrom, curFrom, p.bufB)
			if nCur+nRef == 0 {
				ks.consecutive = 0
				continue
			}
			p.xs = sortedValues(p.xs, p.bufA)
			p.ys = sortedValues(p.ys, p.bufB)
			xs, ys = p.xs, p.ys
		} else if len(xs)+len(ys) == 0 {
			ks.consecutive = 0
			continue
		}
		v := p.meta.NewVerdict(Name, p.metric, k, curFrom, now)
		p.judge(&v, ks, xs, ys, false)
		emit.Verdict(v)
	}
}

// evaluateCanary compares each canary key's [now-Window, now) with the same
// window of its baseline key (the key with Variant = BaselineVariant).
func (p *Processor) evaluateCanary(now int64, keys []schemas.Key, emit processors.Emitter) {
	from := now - p.window
	for _, k := range keys {
		if k.Variant != p.cfg.CanaryVariant {
			continue
		}
		ks := p.keys[k]
		base := k
		base.Variant = p.cfg.BaselineVariant
		bs := p.keys[base]
		xs, ok := ks.cur.Values(&ks.store, from, now)
		var ys []float64
		if ok && bs != nil {
			ys, ok = bs.cur.Values(&bs.store, from, now)
		}
		if !ok {
			var nCur int64
			p.bufA, nCur, _ = ks.store.CollectUniform(from, now, p.bufA)
			if nCur == 0 {
				ks.consecutive = 0
				continue
			}
			p.bufB = p.bufB[:0]
			if bs != nil {
				p.bufB, _, _ = bs.store.CollectUniform(from, now, p.bufB)
			}
			p.xs = sortedValues(p.xs, p.bufA)
			p.ys = sortedValues(p.ys, p.bufB)
			xs, ys = p.xs, p.ys
		} else if len(xs) == 0 {
			ks.consecutive = 0
			continue
		}
		v := p.meta.NewVerdict(Name, p.metric, k, from, now)
		p.judge(&v, ks, xs, ys, true)
		emit.Verdict(v)
	}
}
