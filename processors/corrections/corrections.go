// Package corrections measures how often users correct the answers of each
// key: user-correction events joined to the spans they correct, a rate per
// key with a Wilson interval, and canary vs baseline by a two-proportion
// test.
//
// # Join
//
// Every span with a trace id, a session id or a response id is indexed
// (by 64-bit fingerprints of (tenant, trace id), (tenant, response id) and
// (tenant, session id), the tenant compared exactly: the index keeps no
// ids; two ids of one tenant that collide would share a list, a chance of
// at most 1.6e-13 per correction at the default cap, see fingerprint) for JoinWindow of event time after it
// ended, at most MaxIndexedSpans spans (the oldest by end time, then span
// hash, go first). Corrections are buffered and joined when an evaluation
// passes their time: the watermark is past it then, so every on-time span
// that ended before the correction has arrived and the join does not depend
// on arrival order. A correction at time tc of tenant T joins the latest
// span of tenant T with the same trace id that ended in [tc-JoinWindow,
// tc]; when there is none, the latest such span with the same session id;
// ties on end time go to the smallest span hash. Corrections are joined in
// (time, event-id hash, event id) order.
//
// A response (span) corrected several times counts once: the first
// correction (in that order) is counted in "corrections" and by kind, the
// others in "repeats". So the rate is the share of responses corrected.
//
// A correction that joins nothing (no indexed span of its tenant with its
// trace or session id in the join window, or the pending buffer was full)
// is never dropped: it is counted under the key {Tenant: c.Tenant, Service:
// "", Model: c.Model, Variant: c.Variant} (the service is unknown) and
// reported as metric "unjoined_corrections".
//
// The SLO's own spans (ObserveSpan: its match selects them) are not the
// only ones indexed: the engine hands the processor every other span of
// the tenants it selects too (ObserveUnmatched), without counting them as
// responses, and a correction that joins one of those is another SLO's
// (or no SLO's) and counts nowhere here. Corrections are selected by
// tenant alone, so without them an SLO split by model, variant, service
// or operation, not finding a correction's trace among its own spans,
// fell back to the session and joined it to one of its own spans of that
// session: it counted the other SLOs' corrections as well (on the demo's
// traffic, whose sessions span models, 4.9% for one model's SLO against
// 2.9% for the others', of a 2% correction rate).
//
// # Rate
//
// For key k and window [now-Window, now):
//
//	responses   = spans of k that ended in the window
//	corrections = first corrections of responses of k, with tc in the window
//	rate        = min(corrections, responses) / responses
//
// The numerator and the denominator are not the same population at the
// window edges: a correction early in the window may correct a response
// that ended before it (counted above, not below), and responses near the
// end of the window may still be corrected after now (counted below, not
// yet above). In steady traffic the two edges cancel on average; after a
// step change the rate lags by about the mean correction delay. The clamp
// matters only for tiny windows.
//
// Wilson interval at 0.95 of min(corrections, responses) in responses.
// Status: breach when the interval's lower bound > MaxRate, warn when the
// rate > MaxRate, ok otherwise; insufficient_data (Value 0) below
// MinResponses responses.
//
// # Canary
//
// For every key whose variant is CanaryVariant, a second verdict (metric
// "canary_correction_rate") compares it with the key of the same tenant,
// service and model whose variant is BaselineVariant: see canaryVerdict
// and Config.JudgeCanary.
//
// # Memory
//
// Per span key: (Window/Every + 2) slots of 40 bytes (480 bytes with the
// defaults), 64 more for each slot with a correction. Per unjoined key:
// (Window/Every + 1) slots of 24 bytes. The span index: 52–60 bytes per
// span (a 48-byte entry of fingerprints, no ids or strings, and a 4-byte
// position for each of its join ids in its run's sorted arrays; no hash
// table: see spanIndex), plus the batch of spans since the last
// evaluation in the open run's buffer, for the last JoinWindow of spans
// (index entries only need to outlive JoinWindow: a correction joined at
// an evaluation has a time before it, and the next ones are at or after
// it), at most MaxIndexedSpans (held: at most an eighth more until the
// cap is next applied) — the spans outside the match included (an SLO of
// one of three equally busy models indexes three times its own spans).
// Pending corrections: ~150 bytes each, at most
// MaxPendingCorrections, normally one Every's worth.
package corrections

import (
	"errors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Verdict metrics.
const (
	MetricRate     = "correction_rate"
	MetricCanary   = "canary_correction_rate"
	MetricUnjoined = "unjoined_corrections"
)

// Verdict methods.
const (
	MethodWilson   = "wilson"
	MethodTwoProp  = "two_proportion_z"
	MethodUnjoined = "count"
)

// Level is the confidence level of the intervals.
const Level = 0.95

// OverflowTenant is the tenant of the unjoined key that collects
// corrections beyond MaxUnjoinedKeys.
const OverflowTenant = "__overflow__"

// kinds are the correction kinds counted separately, in detail order; any
// other kind counts as "other".
var kinds = schemas.CorrectionKinds

const nKinds = 8 // len(kinds) + other

func kindIndex(k schemas.CorrectionKind) int {
	for i, x := range kinds {
		if k == x {
			return i
		}
	}
	return nKinds - 1
}

// Processor is the corrections processor of one SLO in one partition
// worker.
type Processor struct {
	// probes: keys judged on the traffic since a half-open began (SetProbes).
	probes processors.Probes
	meta   processors.Meta
	cfg    Config
	every  int64
	win    int64
	join   int64

	keys     map[schemas.Key]*keyState
	unjoined map[schemas.Key]*unjoinedState
	index    *spanIndex
	pending  []pending
	// joined are the corrections attributed by the current Evaluate, for
	// the engine to hand to the rollups (TakeJoined); not part of the
	// snapshot: the engine takes them right after each Evaluate.
	joined []processors.JoinedCorrection

	snapSize snapcodec.SizeHint // the last snapshot's size, for the next one's allocation
}

// keyState is one key's responses and corrections per slot of Every.
type keyState struct {
	key   schemas.Key
	slots []slot // sorted by start
	// refs counts index entries pointing here; the state is kept while
	// any span of the key can still be corrected.
	refs int32
	id   uint32 // the key's id in the span index while refs > 0
	// foreign: a key outside the SLO's match whose spans are indexed only
	// so that their corrections join them (ObserveUnmatched); no slots.
	foreign bool
}

// slot is 40 bytes: the counts by kind are allocated with a slot's first
// correction (at a 2% correction rate most slots of a small key have
// none), where an inline array made it 96.
type slot struct {
	start       int64
	responses   int64
	corrections int64
	repeats     int64
	kinds       *[nKinds]int64 // nil: no correction counted
}

// countKind counts a first correction of kind in s.
func (s *slot) countKind(k schemas.CorrectionKind) {
	if s.kinds == nil {
		s.kinds = new([nKinds]int64)
	}
	s.kinds[kindIndex(k)]++
}

type unjoinedState struct {
	slots []uslot
}

type uslot struct {
	start    int64
	n        int64
	overflow int64 // of n, counted because the pending buffer was full
}

// pending is a buffered correction, reduced to what the join needs.
type pending struct {
	tc      int64
	h       uint64
	eventID string
	tenant  string
	trace   schemas.TraceID
	session string
	resp    string // gen_ai.response.id (corrections made of evaluation events)
	model   string
	variant string
	kind    schemas.CorrectionKind
}

// New validates cfg and returns an empty processor.
func New(meta processors.Meta, cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Processor{
		meta:     meta,
		cfg:      cfg,
		every:    int64(cfg.Every),
		win:      int64(cfg.Window),
		join:     int64(cfg.JoinWindow),
		keys:     map[schemas.Key]*keyState{},
		unjoined: map[schemas.Key]*unjoinedState{},
		index:    newSpanIndex(cfg.MaxIndexedSpans),
	}, nil
}

// Interval is Config.Every.
func (p *Processor) Interval() time.Duration { return p.cfg.Every }

// Keys is the number of span keys and unjoined keys holding state.
func (p *Processor) Keys() int { return len(p.keys) + len(p.unjoined) }

// Hooks: probed keys are judged on the traffic since their probe's start
// (SetProbes), the corrections attributed go to the rollups (TakeJoined),
// and indexed spans and waiting corrections are state Keys does not count
// (Pending).
func (p *Processor) Hooks() processors.Hooks {
	return processors.Hooks{SetProbes: p.SetProbes, TakeJoined: p.TakeJoined, Pending: p.holdsPending, ObserveUnmatched: p.ObserveUnmatched}
}

// holdsPending reports spans indexed for joining or corrections waiting for the
// watermark (Hooks.Pending).
func (p *Processor) holdsPending() bool {
	indexed, _, waiting := p.IndexStats()
	return indexed > 0 || waiting > 0
}

// IndexStats returns the spans indexed for joining, the spans evicted (or
// never indexed) because of MaxIndexedSpans since the start, and the
// corrections waiting for the watermark.
func (p *Processor) IndexStats() (indexed int, evictedByCap int64, pendingCorrections int) {
	return p.index.len(), p.index.evictedCount(), len(p.pending)
}

func (p *Processor) state(key schemas.Key) *keyState {
	ks := p.keys[key]
	if ks == nil {
		ks = &keyState{key: key, slots: make([]slot, 0, p.slotRoom())}
		p.keys[key] = ks
	}
	return ks
}

// slotRoom is the capacity a key's slots start with: a window of slots
// and the one ahead (12 with the defaults), where append's growth from
// empty ends at 16; at most 16 (a key of a long window with sparse
// traffic holds few).
func (p *Processor) slotRoom() int { return int(min(p.win/p.every+2, 16)) }

// ObserveSpan counts a response of key and indexes the span for joining.
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	ks := p.state(key)
	ks.slot(processors.FloorTo(s.EndUnixNano, p.every)).responses++
	p.indexSpan(ks, s)
}

// ObserveUnmatched indexes a span of the SLO's tenants that its match does
// not select (Hooks.ObserveUnmatched): a correction of that span joins it
// and is not counted here, where it would otherwise have fallen back to
// the session and joined one of the SLO's own spans. It counts no
// response. Memory: an index entry per such span, as for the SLO's own
// (an SLO split in two by model indexes every span of its tenants).
func (p *Processor) ObserveUnmatched(key schemas.Key, s *schemas.Span) {
	if s.TraceID.IsZero() && s.SessionID == "" && s.ResponseID == "" {
		return
	}
	p.indexSpan(p.index.foreignState(key), s)
}

// indexSpan indexes s, a span of ks, for joining (spans without a trace,
// session or response id are not indexed: nothing can join them).
func (p *Processor) indexSpan(ks *keyState, s *schemas.Span) {
	if s.TraceID.IsZero() && s.SessionID == "" && s.ResponseID == "" {
		return
	}
	seed := tenantSeed(s.Key.Tenant)
	p.index.add(entry{
		end:     s.EndUnixNano,
		h:       processors.SpanHash(s),
		trace:   traceFingerprint(seed, s.TraceID),
		session: fingerprint(seed, fpSession, s.SessionID),
		resp:    fingerprint(seed, fpResp, s.ResponseID),
		tenant:  p.index.tenantID(s.Key.Tenant),
	}, ks)
}

// ObserveCorrection buffers c until an evaluation passes its time.
func (p *Processor) ObserveCorrection(c *schemas.Correction) {
	if len(p.pending) >= p.cfg.MaxPendingCorrections {
		u := p.unjoinedSlot(schemas.Key{Tenant: c.Tenant, Model: c.Model, Variant: c.Variant}, processors.FloorTo(c.TimeUnixNano, p.every))
		u.n++
		u.overflow++
		return
	}
	p.pending = append(p.pending, pending{
		tc:      c.TimeUnixNano,
		h:       processors.CorrectionHash(c),
		eventID: c.EventID,
		tenant:  c.Tenant,
		trace:   c.TraceID,
		session: c.SessionID,
		resp:    c.ResponseID,
		model:   c.Model,
		variant: c.Variant,
		kind:    c.Kind,
	})
}

// joinPending joins every buffered correction with a time before now, in
// (time, hash, event id) order, and keeps the rest buffered.
func (p *Processor) joinPending(now int64) {
	slices.SortFunc(p.pending, comparePending)
	done := 0
	for done < len(p.pending) && p.pending[done].tc < now {
		c := &p.pending[done]
		start := processors.FloorTo(c.tc, p.every)
		seed := tenantSeed(c.tenant)
		if j := p.index.find(c.tenant, traceFingerprint(seed, c.trace), fingerprint(seed, fpResp, c.resp), fingerprint(seed, fpSession, c.session), c.tc, p.join); j >= 0 {
			e := p.index.at(j)
			ks := p.index.keyOf(e)
			if ks.foreign {
				// The span is outside the SLO: the correction is another
				// SLO's (or none's), counted nowhere here; the rollups
				// still get it, attributed to its span's key.
				if !e.corrected() {
					e.setCorrected()
					p.joined = append(p.joined, processors.JoinedCorrection{Key: ks.key, TimeUnixNano: c.tc})
				}
				done++
				continue
			}
			sl := ks.slot(start)
			if e.corrected() {
				sl.repeats++
			} else {
				e.setCorrected()
				sl.corrections++
				sl.countKind(c.kind)
				p.joined = append(p.joined, processors.JoinedCorrection{Key: ks.key, TimeUnixNano: c.tc})
			}
		} else {
			k := schemas.Key{Tenant: c.tenant, Model: c.model, Variant: c.variant}
			p.unjoinedSlot(k, start).n++
			p.joined = append(p.joined, processors.JoinedCorrection{Key: k, TimeUnixNano: c.tc})
		}
		done++
	}
	p.pending = slices.Delete(p.pending, 0, done)
}

// TakeJoined returns the corrections attributed by the last Evaluate (to
// the key of the span they joined, or to their own fields when they joined
// none; repeats of an already corrected response are left out) and
// forgets them.
func (p *Processor) TakeJoined() []processors.JoinedCorrection {
	j := p.joined
	p.joined = nil
	return j
}

func (p *Processor) unjoinedSlot(k schemas.Key, start int64) *uslot {
	u := p.unjoined[k]
	if u == nil {
		if len(p.unjoined) >= p.cfg.MaxUnjoinedKeys {
			k = schemas.Key{Tenant: OverflowTenant}
			u = p.unjoined[k]
		}
		if u == nil {
			u = &unjoinedState{}
			p.unjoined[k] = u
		}
	}
	i := len(u.slots)
	for i > 0 && u.slots[i-1].start > start {
		i--
	}
	if i > 0 && u.slots[i-1].start == start {
		return &u.slots[i-1]
	}
	u.slots = slices.Insert(u.slots, i, uslot{start: start})
	return &u.slots[i]
}

// slot finds or inserts the slot starting at start.
func (ks *keyState) slot(start int64) *slot {
	i := len(ks.slots)
	for i > 0 && ks.slots[i-1].start > start {
		i--
	}
	if i > 0 && ks.slots[i-1].start == start {
		return &ks.slots[i-1]
	}
	ks.slots = slices.Insert(ks.slots, i, slot{start: start})
	return &ks.slots[i]
}

func slotStart(s *slot) int64   { return s.start }
func uslotStart(u *uslot) int64 { return u.start }

// Evaluate joins the corrections the watermark has passed, judges every key
// with responses or corrections in [now-Window, now) and every canary with
// its baseline, reports unjoined corrections, then drops what no later
// window or join needs.
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	p.joinPending(now)
	from := now - p.win
	var out []schemas.Verdict
	tallies := make(map[schemas.Key]tally, len(p.keys))
	unjoinedByTenant := map[string]int64{}
	for k, u := range p.unjoined {
		var n int64
		for _, s := range u.slots {
			if s.start >= from && s.start+p.every <= now {
				n += s.n
			}
		}
		unjoinedByTenant[k.Tenant] += n
	}
	for _, k := range processors.SortedKeys(p.keys, nil) {
		kf := p.probes.From(k, from)
		t := p.keys[k].tally(kf, now, p.every)
		if t.responses == 0 && t.corrections == 0 && t.repeats == 0 {
			continue
		}
		tallies[k] = t
		out = append(out, p.rateVerdict(k, t, unjoinedByTenant[k.Tenant], kf, now))
	}
	for k, t := range tallies {
		if k.Variant != p.cfg.CanaryVariant {
			continue
		}
		bk := k
		bk.Variant = p.cfg.BaselineVariant
		out = append(out, p.canaryVerdict(k, t, tallies[bk], from, now))
	}
	for _, k := range processors.SortedKeys(p.unjoined, nil) {
		if v, ok := p.unjoinedVerdict(k, p.unjoined[k], from, now); ok {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b schemas.Verdict) int {
		if c := strings.Compare(a.Key.String(), b.Key.String()); c != 0 {
			return c
		}
		return strings.Compare(a.Metric, b.Metric)
	})
	for i := range out {
		emit.Verdict(out[i])
	}
	p.evict(now)
}

// evict drops slots before the next window, spans no later correction can
// join, and keys left with nothing.
func (p *Processor) evict(now int64) {
	keep := now + p.every - p.win
	p.index.evictBefore(now - p.join)
	for k, ks := range p.keys {
		ks.slots = processors.DropSlotsBefore(ks.slots, keep, p.every, slotStart)
		if len(ks.slots) == 0 && ks.refs == 0 {
			delete(p.keys, k)
		}
	}
	for k, u := range p.unjoined {
		u.slots = processors.DropSlotsBefore(u.slots, keep, p.every, uslotStart)
		if len(u.slots) == 0 {
			delete(p.unjoined, k)
		}
	}
}

// tally is one key's sums over a window.
type tally struct {
	responses, corrections, repeats int64
	kinds                           [nKinds]int64
}

func (ks *keyState) tally(from, to, every int64) tally {
	var t tally
	for i := range ks.slots {
		s := &ks.slots[i]
		if s.start < from || s.start+every > to {
			continue
		}
		t.responses += s.responses
		t.corrections += s.corrections
		t.repeats += s.repeats
		if s.kinds != nil {
			for j := range t.kinds {
				t.kinds[j] += s.kinds[j]
			}
		}
	}
	return t
}

// ErrCorrupt is wrapped by every UnmarshalBinary error (with
// snapcodec.ErrDamaged and a message saying what is wrong and where).
var ErrCorrupt = errors.New("corrections: corrupt snapshot")

// Processor implements processors.Processor.
var _ processors.Processor = (*Processor)(nil)

// SetProbes is the processor's Hooks.SetProbes: a probed key is judged on the
// traffic since its probe's start (see processors.Probes).
func (p *Processor) SetProbes(pr processors.Probes) { p.probes = pr }
