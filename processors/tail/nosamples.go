package tail

import (
	"slices"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// MethodNoSamples labels the insufficient_data verdicts of a key whose
// calls matched the SLO but carried none of its metric (a ttft_ms SLO on
// spans without time to first token) for Config.NoSamplesEvaluations
// evaluations in a row: the SLO is blind there, and says so, instead of
// staying silent. Its details are DetailCalls, DetailEvaluations and
// DetailNoSamplesEvaluations; its Evidence lists the instrumentation
// scopes of those calls (Evidence.Scopes).
const MethodNoSamples = "no_samples"

// Detail names of a no_samples verdict, in order.
const (
	DetailCalls                = "calls"                  // calls in the window without the metric
	DetailEvaluations          = "evaluations"            // evaluations in a row with calls and no sample
	DetailNoSamplesEvaluations = "no_samples_evaluations" // the configured number before the verdict
)

// maxScopes bounds the instrumentation scopes remembered per key.
const maxScopes = 8

// unsampled is one key's calls without the metric: per slot of Every
// (start, event time), how many, so that the count over a window does not
// depend on the order the calls came in; the evaluations in a row that
// found calls and no sample; the scopes of those calls (sorted, at most
// maxScopes).
type unsampled struct {
	slots  []unsampledSlot // ascending start
	evals  int64
	scopes []string
}

type unsampledSlot struct {
	start int64
	calls int64
}

// observeUnsampled counts a call of key without the metric.
func (p *Processor) observeUnsampled(key schemas.Key, s *schemas.Span) {
	u := p.unsampled[key]
	if u == nil {
		u = &unsampled{}
		p.unsampled[key] = u
	}
	start := s.EndUnixNano - mod(s.EndUnixNano, p.every)
	i, found := slices.BinarySearchFunc(u.slots, start, func(x unsampledSlot, t int64) int {
		switch {
		case x.start < t:
			return -1
		case x.start > t:
			return 1
		}
		return 0
	})
	if found {
		u.slots[i].calls++
	} else {
		u.slots = slices.Insert(u.slots, i, unsampledSlot{start: start, calls: 1})
	}
	scope := s.Scope
	if scope == "" {
		scope = "unknown"
	}
	if j, ok := slices.BinarySearch(u.scopes, scope); !ok && len(u.scopes) < maxScopes {
		u.scopes = slices.Insert(u.scopes, j, scope)
	}
}

// evaluateUnsampled emits, in key order, a no_samples verdict for every
// key whose window [from, now) holds calls without the metric and no
// sample, once that has held for NoSamplesEvaluations evaluations in a
// row; sampled reports whether a key had samples in the window. A key
// that gets samples, or whose window holds no call, starts over.
func (p *Processor) evaluateUnsampled(now int64, sampled func(schemas.Key) bool, emit processors.Emitter) {
	from := now - p.window
	for _, k := range processors.SortedKeys(p.unsampled, &p.uorder) {
		u := p.unsampled[k]
		var calls int64
		for _, sl := range u.slots {
			if sl.start+p.every > from && sl.start < now {
				calls += sl.calls
			}
		}
		// Drop the slots no later window needs, as the sample store does.
		keep := u.slots[:0]
		for _, sl := range u.slots {
			if sl.start+p.every > now+p.every-p.window {
				keep = append(keep, sl)
			}
		}
		u.slots = keep
		switch {
		case sampled(k):
			delete(p.unsampled, k)
			continue
		case calls == 0:
			u.evals, u.scopes = 0, u.scopes[:0]
			if len(u.slots) == 0 {
				delete(p.unsampled, k)
			}
			continue
		}
		u.evals++
		if u.evals < int64(p.cfg.NoSamplesEvaluations) {
			continue
		}
		v := p.meta.NewVerdict(Name, p.metric, k, from, now)
		v.Status = schemas.StatusInsufficientData
		v.Method = MethodNoSamples
		v.Threshold = p.cfg.Budget
		v.Details = []schemas.Detail{
			{Name: DetailCalls, Value: float64(calls)},
			{Name: DetailEvaluations, Value: float64(u.evals)},
			{Name: DetailNoSamplesEvaluations, Value: float64(p.cfg.NoSamplesEvaluations)},
		}
		v.Evidence = &schemas.Evidence{Scopes: slices.Clone(u.scopes)}
		emit.Verdict(v)
	}
}

// mod is a mod b in [0, b).
func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// appendUnsampled writes the unsampled keys (snapshot format 3).
func (p *Processor) appendUnsampled(e *snapcodec.Encoder) {
	snapcodec.PutKeyed(e, processors.SortedKeys(p.unsampled, &p.uorder), p.unsampled, func(u *unsampled, e *snapcodec.Encoder) {
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

// decodeUnsampled reads what appendUnsampled wrote.
func decodeUnsampled(d *snapcodec.Decoder) map[schemas.Key]*unsampled {
	return snapcodec.GetKeyed(d, 16, func(d *snapcodec.Decoder, _ schemas.Key) *unsampled {
		u := &unsampled{}
		n := d.Count(16)
		for i := 0; i < n && d.Err() == nil; i++ {
			u.slots = append(u.slots, unsampledSlot{start: d.I64(), calls: d.I64()})
		}
		u.evals = d.I64()
		n = d.Count(4)
		for i := 0; i < n && d.Err() == nil; i++ {
			u.scopes = append(u.scopes, d.String())
		}
		return u
	})
}
