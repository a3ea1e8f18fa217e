// Package nosamples counts, per key, the calls that matched an SLO but
// carried no value of its metric, and turns a key's run of evaluations
// with such calls and no sample into processors.MethodNoSamples verdicts.
// The tail, drift and decay kinds share it: each counts its calls without
// the metric (Observe), says at every evaluation which keys it judged
// (sampled), and writes the tracker into its snapshot (Encode, Decode).
//
// Calls are counted per slot of Every (start, event time), so the count
// over a window does not depend on the order they came in; a key keeps
// 16 bytes per slot with calls and its instrumentation scopes (sorted, at
// most MaxScopes). Like the processors, it reads no clock.
package nosamples

import (
	"slices"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// MaxScopes bounds the instrumentation scopes remembered per key.
const MaxScopes = 8

// UnknownScope stands for a span without an instrumentation scope.
const UnknownScope = "unknown"

// Tracker is the calls without the metric of one processor's keys. The
// zero Tracker is not usable: make one with New.
type Tracker struct {
	every, window int64 // ns
	keys          map[schemas.Key]*entry
	order         processors.KeyOrder
}

// entry is one key's calls without the metric: per slot, how many
// (ascending start); the evaluations in a row that found calls and no
// sample; the scopes of those calls.
type entry struct {
	slots  []slot
	evals  int64
	scopes []string
}

type slot struct {
	start int64
	calls int64
}

// New returns an empty tracker counting per slot of every over windows of
// window (both ns, every > 0).
func New(every, window int64) *Tracker {
	return &Tracker{every: every, window: window, keys: map[schemas.Key]*entry{}}
}

// Len is the number of keys held.
func (t *Tracker) Len() int { return len(t.keys) }

// Observe counts a call of key without the metric.
func (t *Tracker) Observe(key schemas.Key, s *schemas.Span) {
	u := t.keys[key]
	if u == nil {
		u = &entry{}
		t.keys[key] = u
	}
	start := processors.FloorTo(s.EndUnixNano, t.every)
	i, found := slices.BinarySearchFunc(u.slots, start, func(x slot, v int64) int {
		switch {
		case x.start < v:
			return -1
		case x.start > v:
			return 1
		}
		return 0
	})
	if found {
		u.slots[i].calls++
	} else {
		u.slots = slices.Insert(u.slots, i, slot{start: start, calls: 1})
	}
	scope := s.Scope
	if scope == "" {
		scope = UnknownScope
	}
	if j, ok := slices.BinarySearch(u.scopes, scope); !ok && len(u.scopes) < MaxScopes {
		u.scopes = slices.Insert(u.scopes, j, scope)
	}
}

// Calls is key's calls without the metric in the slots overlapping
// [now-Window, now).
func (t *Tracker) Calls(key schemas.Key, now int64) int64 {
	u := t.keys[key]
	if u == nil {
		return 0
	}
	from := now - t.window
	var calls int64
	for _, sl := range u.slots {
		if sl.start+t.every > from && sl.start < now {
			calls += sl.calls
		}
	}
	return calls
}

// Scopes appends key's scopes to dst, sorted and without repeats.
func (t *Tracker) Scopes(dst []string, key schemas.Key) []string {
	if u := t.keys[key]; u != nil {
		for _, s := range u.scopes {
			if j, ok := slices.BinarySearch(dst, s); !ok {
				dst = slices.Insert(dst, j, s)
			}
		}
	}
	return dst
}

// Keys is the keys held, in Key.String order (valid until the next call).
func (t *Tracker) Keys() []schemas.Key { return processors.SortedKeys(t.keys, &t.order) }

// Advance moves key's run: one more evaluation when blind (creating the
// key if needed), back to 0 otherwise (its scopes forgotten, as a new
// run starts). It returns the run's length.
func (t *Tracker) Advance(key schemas.Key, blind bool) int64 {
	u := t.keys[key]
	if !blind {
		if u != nil {
			u.evals, u.scopes = 0, u.scopes[:0]
		}
		return 0
	}
	if u == nil {
		u = &entry{}
		t.keys[key] = u
	}
	u.evals++
	return u.evals
}

// Forget drops key: it has samples, and its calls without the metric are
// no blindness.
func (t *Tracker) Forget(key schemas.Key) { delete(t.keys, key) }

// Evict drops the slots no window after now needs (those starting at or
// before now-Window, as the sample stores do) and the keys left with no
// slot and no run.
func (t *Tracker) Evict(now int64) {
	cut := now + t.every - t.window
	for k, u := range t.keys {
		keep := u.slots[:0]
		for _, sl := range u.slots {
			if sl.start+t.every > cut {
				keep = append(keep, sl)
			}
		}
		u.slots = keep
		if len(u.slots) == 0 && u.evals == 0 {
			delete(t.keys, k)
		}
	}
}

// Blind is what a no_samples verdict says of a key: the calls without the
// metric in the window, the evaluations in a row and the scopes.
type Blind struct {
	Key         schemas.Key
	Calls       int64
	Evaluations int64
	Scopes      []string
}

// Evaluate advances every held key at the evaluation at now, in key
// order: a key that sampled reports judged (a verdict of its own) is
// forgotten; one whose window holds calls without the metric has its run
// advanced, and from the need-th evaluation in a row on, emit gets it; one
// whose window holds none starts over. Then the slots no later window
// needs are dropped. The processor builds the verdict (Fill).
func (t *Tracker) Evaluate(now int64, need int, sampled func(schemas.Key) bool, emit func(Blind)) {
	for _, k := range t.Keys() {
		if sampled(k) {
			t.Forget(k)
			continue
		}
		calls := t.Calls(k, now)
		run := t.Advance(k, calls > 0)
		if calls > 0 && run >= int64(need) {
			emit(Blind{Key: k, Calls: calls, Evaluations: run, Scopes: t.Scopes(nil, k)})
		}
	}
	t.Evict(now)
}

// Fill makes v (from Meta.NewVerdict) the no_samples verdict of b: status
// insufficient_data, method no_samples, value and N 0, the details calls,
// evaluations and no_samples_evaluations (need), the scopes as evidence.
func Fill(v *schemas.Verdict, b Blind, need int) {
	v.Status = schemas.StatusInsufficientData
	v.Method = processors.MethodNoSamples
	v.Value, v.N = 0, 0
	v.Details = []schemas.Detail{
		{Name: processors.DetailNoSamplesCalls, Value: float64(b.Calls)},
		{Name: processors.DetailNoSamplesRun, Value: float64(b.Evaluations)},
		{Name: processors.DetailNoSamplesEvaluations, Value: float64(need)},
	}
	v.Evidence = &schemas.Evidence{Scopes: slices.Clone(b.Scopes)}
}

// Encode writes the tracker: the keys in Key.String order, each with its
// slots (start, calls), its run and its scopes.
func (t *Tracker) Encode(e *snapcodec.Encoder) {
	snapcodec.PutKeyed(e, t.Keys(), t.keys, func(u *entry, e *snapcodec.Encoder) {
		e.Count(len(u.slots))
		for _, sl := range u.slots {
			e.I64(sl.start)
			e.I64(sl.calls)
		}
		e.I64(u.evals)
		e.Count(len(u.scopes))
		for _, s := range u.scopes {
			e.String(s)
		}
	})
}

// Decode replaces the tracker's keys with what Encode wrote; a damage is
// d's error (the keys are then unchanged).
func (t *Tracker) Decode(d *snapcodec.Decoder) {
	keys := snapcodec.GetKeyed(d, 16, func(d *snapcodec.Decoder, _ schemas.Key) *entry {
		u := &entry{}
		n := d.Count(16)
		for i := 0; i < n && d.Err() == nil; i++ {
			u.slots = append(u.slots, slot{start: d.I64(), calls: d.I64()})
		}
		u.evals = d.I64()
		n = d.Count(4)
		for i := 0; i < n && d.Err() == nil; i++ {
			u.scopes = append(u.scopes, d.String())
		}
		return u
	})
	if d.Err() == nil {
		t.keys = keys
	}
}

// IsFormat reports whether b starts with f's header: which of a kind's
// snapshot formats b is.
func IsFormat(b []byte, f snapcodec.Format) bool {
	d := snapcodec.NewDecoder(b)
	d.Header(f.Name, f.Version)
	return d.Err() == nil
}
