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
//   - the latency spread: the sample variance (ms²) and standard deviation
//     (ms) of duration_ms over every span of the window, from exact integer
//     moments kept per slot (count, Σx and Σx² of the durations in ns, 128-
//     and 192-bit: see moments): variance = (n·Σx² − (Σx)²) / (n·(n−1)),
//     computed exactly and rounded once to float64, so the result is the
//     same bit for bit whatever the arrival order and however the spans
//     fall into slots, and the large-mean cancellation of a float Σx² cannot
//     happen. A duration that is NaN, negative or over 24 h (which span
//     validation rejects) is no latency: the span counts in the mix and in
//     n but not in the variance. Fewer than two latencies: 0 and 0.
//
// Config.Decide is the decision table. Verdicts: metric "scaling", Value the
// normalised entropy, Threshold EntropyHigh, no interval, method
// "entropy_welford_table" (the name kept for the verdicts' consumers;
// the variance is no longer a Welford sum); Details entropy_bits,
// normalized_entropy, categories, variance_ms2, stddev_ms, decision (-1
// scale in, 0 hold, +1 scale out one step), low_streak, latency_samples
// (the spans the variance is over: n less those without a valid
// duration), n (spans in the window).
//
// Memory per scope key: (Window/Every + 1) slots, each with a category map
// of at most MaxCategories+1 entries (~40 bytes each) and 48 bytes of
// latency moments, whatever the traffic: with the defaults (5m/1m, a
// handful of categories) a few KB per key, where the latency sample of
// earlier versions took 24 bytes per span (up to ~290 KB per busy key).
package scaling

import (
	"cmp"
	"errors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
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
	spread spreadScratch
	merged map[uint64]int64
	counts []catCount
	order  processors.KeyOrder

	snapSize snapcodec.SizeHint // the last snapshot's size, for the next one's allocation
}

type keyState struct {
	slots     []mixSlot // sorted by start
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

// ObserveSpan counts the span's category and adds its duration to the
// latency moments of its scope key's slot (a duration that is NaN,
// negative or over schemas.MaxDurationMs is not added: see durationNs). It
// does not allocate once the key's current slot exists.
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	sk := p.ScopeKey(key)
	ks := p.keys[sk]
	if ks == nil {
		ks = &keyState{}
		p.keys[sk] = ks
	}
	sl := ks.slot(processors.FloorTo(s.EndUnixNano, p.every))
	sl.add(categoryHash(p.mix, s), p.cfg.MaxCategories)
	if x, ok := durationNs(s.DurationMs); ok {
		sl.lat.add(x)
	}
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
		ks.slots = processors.DropSlotsBefore(ks.slots, keep, p.every, mixSlotStart)
		// A key with a running low streak stays until an evaluation finds
		// its window empty (which resets the streak).
		if len(ks.slots) == 0 && ks.lowStreak == 0 {
			delete(p.keys, k)
		}
	}
}

// judge computes the verdict of one scope key; ok is false when the window
// holds no span of it.
func (p *Processor) judge(k schemas.Key, ks *keyState, from, to int64) (schemas.Verdict, bool) {
	clear(p.merged)
	var n int64
	var lat moments
	for i := range ks.slots {
		sl := &ks.slots[i]
		if sl.start < from || sl.start+p.every > to {
			continue
		}
		n += sl.n
		lat.merge(&sl.lat)
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
	variance, sd := p.spread.spread(&lat)
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
		{Name: "latency_samples", Value: float64(lat.n)},
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
