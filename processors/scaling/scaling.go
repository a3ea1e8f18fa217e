// Package scaling turns the request mix and the latency spread of a scaling
// target into scale-out / hold / scale-in hints.
//
// Per scope key (the span's key with the dimensions outside Config.Scope
// replaced by schemas.Wildcard), over the window [now-Window, now):
//
//   - the request mix: spans are counted per category, a category being the
//     tuple of the span's Config.Mix fields (route, model, variant, tenant,
//     service, read from the span itself). The counts are exact (no
//     sampling) up to MaxCategories categories per slot. The Shannon
//     entropy H = -Σ p_i log2 p_i (bits) of the category shares, and its
//     normalised form H / log2(K) in [0, 1] (K the number of categories in
//     the window; 0 when K = 1), measure how spread the mix is;
//   - the latency spread: the sample variance (Welford, ms²) and standard
//     deviation (ms) of duration_ms over the window's latency sample (at
//     most MaxSamplesPerSlot spans per slot, a uniform sample by span-id
//     hash), taken in the window's canonical order so the result is the
//     same bit for bit whatever the arrival order.
//
// Config.Decide is the decision table. Verdicts: metric "scaling", Value the
// normalised entropy, Threshold EntropyHigh, no interval, method
// "entropy_welford_table"; Details entropy_bits, normalized_entropy,
// categories, variance_ms2, stddev_ms, decision (-1 scale in, 0 hold, +1
// scale out one step), low_streak, n (spans in the window).
//
// Memory per scope key: (Window/Every + 1) slots, each with a category map
// of at most MaxCategories+1 entries (~40 bytes each) and at most
// MaxSamplesPerSlot latencies of 24 bytes. With the defaults (5m/1m, 2000
// latencies, a handful of categories) that is at most ~290 KB per key under
// heavy traffic, ~24 bytes per span under light traffic.
package scaling

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// MetricScaling is the verdict metric.
const MetricScaling = "scaling"

// Method is the verdict method.
const Method = "entropy_welford_table"

// Processor is the scaling processor of one SLO in one partition worker.
type Processor struct {
	meta  processors.Meta
	cfg   Config
	scope [4]bool // tenant, service, model, variant kept in the scope key
	mix   []mixField
	every int64
	win   int64
	keys  map[schemas.Key]*keyState

	// scratch reused across evaluations
	samples []window.Sample
	merged  map[uint64]int64
	counts  []catCount
	order   processors.KeyOrder
}

type keyState struct {
	slots     []mixSlot // sorted by start
	lat       *window.Store
	lowStreak int
}

type catCount struct {
	h uint64
	n int64
}

// New validates cfg and returns an empty processor.
func New(meta processors.Meta, cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Processor{
		meta:   meta,
		cfg:    cfg,
		mix:    parseMix(cfg.Mix),
		every:  int64(cfg.Every),
		win:    int64(cfg.Window),
		keys:   map[schemas.Key]*keyState{},
		merged: map[uint64]int64{},
	}
	for _, d := range cfg.Scope {
		switch d {
		case "tenant":
			p.scope[0] = true
		case "service":
			p.scope[1] = true
		case "model":
			p.scope[2] = true
		case "variant":
			p.scope[3] = true
		}
	}
	return p, nil
}

// Interval is Config.Every.
func (p *Processor) Interval() time.Duration { return p.cfg.Every }

// Keys is the number of scope keys holding state.
func (p *Processor) Keys() int { return len(p.keys) }

// Hooks is the zero Hooks: the processor has no relay with the others.
func (p *Processor) Hooks() processors.Hooks { return processors.Hooks{} }

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

// ScopeKey is key with the dimensions outside the scope replaced by
// schemas.Wildcard.
func (p *Processor) ScopeKey(key schemas.Key) schemas.Key {
	if !p.scope[0] {
		key.Tenant = schemas.Wildcard
	}
	if !p.scope[1] {
		key.Service = schemas.Wildcard
	}
	if !p.scope[2] {
		key.Model = schemas.Wildcard
	}
	if !p.scope[3] {
		key.Variant = schemas.Wildcard
	}
	return key
}

// ObserveSpan counts the span's category and keeps its latency in the
// window sample of its scope key. It does not allocate once the key's
// current slot exists.
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	sk := p.ScopeKey(key)
	ks := p.keys[sk]
	if ks == nil {
		lat, _ := window.New(p.every, p.cfg.MaxSamplesPerSlot)
		ks = &keyState{lat: lat}
		p.keys[sk] = ks
	}
	ks.slot(ks.lat.SlotStart(s.EndUnixNano)).add(categoryHash(p.mix, s), p.cfg.MaxCategories)
	ks.lat.Add(window.Sample{T: s.EndUnixNano, V: s.DurationMs, H: processors.SpanHash(s)})
}

// slot finds or inserts the mix slot starting at start, searching from the
// newest since records arrive mostly in time order.
func (ks *keyState) slot(start int64) *mixSlot {
	i := len(ks.slots)
	for i > 0 && ks.slots[i-1].start > start {
		i--
	}
	if i > 0 && ks.slots[i-1].start == start {
		return &ks.slots[i-1]
	}
	ks.slots = slices.Insert(ks.slots, i, newMixSlot(start))
	return &ks.slots[i]
}

// Evaluate judges every scope key with spans in [now-Window, now), in key
// order, then drops the slots no later window needs.
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	from := now - p.win
	for _, k := range processors.SortedKeys(p.keys, &p.order) {
		ks := p.keys[k]
		if v, ok := p.judge(k, ks, from, now); ok {
			emit.Verdict(v)
		} else {
			ks.lowStreak = 0
		}
		// The next evaluation's window starts at now+every-window.
		keep := now + p.every - p.win
		ks.lat.EvictBefore(keep)
		ks.slots = processors.DropSlotsBefore(ks.slots, keep, p.every, mixSlotStart)
		// A key with a running low streak stays until an evaluation finds
		// its window empty (which resets the streak).
		if len(ks.slots) == 0 && ks.lat.Empty() && ks.lowStreak == 0 {
			delete(p.keys, k)
		}
	}
}

// judge computes the verdict of one scope key; ok is false when the window
// holds no span of it.
func (p *Processor) judge(k schemas.Key, ks *keyState, from, to int64) (schemas.Verdict, bool) {
	clear(p.merged)
	var n int64
	for i := range ks.slots {
		sl := &ks.slots[i]
		if sl.start < from || sl.start+p.every > to {
			continue
		}
		n += sl.n
		for h, c := range sl.counts {
			p.merged[h] += c
		}
	}
	if n == 0 {
		return schemas.Verdict{}, false
	}
	// Canonical order for the entropy sum: by category hash.
	p.counts = p.counts[:0]
	for h, c := range p.merged {
		p.counts = append(p.counts, catCount{h, c})
	}
	slices.SortFunc(p.counts, compareCategories)
	v := p.meta.NewVerdict(Name, MetricScaling, k, from, to)
	v.Threshold = p.cfg.EntropyHigh
	v.Method = Method
	v.N = n
	cats := float64(len(p.counts))
	if n < int64(p.cfg.MinSamples) {
		v.Status = schemas.StatusInsufficientData
		v.Details = []schemas.Detail{
			{Name: "categories", Value: cats},
			{Name: "min_samples", Value: float64(p.cfg.MinSamples)},
			{Name: "n", Value: float64(n)},
		}
		return v, true
	}
	hBits, norm := entropy(p.counts)
	p.samples, _ = ks.lat.Collect(from, to, p.samples[:0])
	variance, sd := latencySpread(p.samples)
	j := p.cfg.Decide(norm, sd, ks.lowStreak)
	ks.lowStreak = j.LowStreak
	v.Value = norm
	v.Status = j.Status
	v.Details = []schemas.Detail{
		{Name: "entropy_bits", Value: hBits},
		{Name: "normalized_entropy", Value: norm},
		{Name: "categories", Value: cats},
		{Name: "variance_ms2", Value: variance},
		{Name: "stddev_ms", Value: sd},
		{Name: "decision", Value: float64(j.Decision)},
		{Name: "low_streak", Value: float64(j.LowStreak)},
		{Name: "latency_samples", Value: float64(len(p.samples))},
		{Name: "n", Value: float64(n)},
	}
	return v, true
}

// compareCategories orders category counts by hash, the canonical order of
// the entropy sum and of snapshots.
func compareCategories(a, b catCount) int { return cmp.Compare(a.h, b.h) }

// ErrCorrupt is wrapped by every UnmarshalBinary error (with
// snapcodec.ErrDamaged and a message saying what is wrong and where).
var ErrCorrupt = errors.New("scaling: corrupt snapshot")

// Processor implements processors.Processor.
var _ processors.Processor = (*Processor)(nil)
