package processors

import "github.com/fusebox-dev/fusebox/schemas"

// Hooks are a processor's relays with the engine and with the other
// processors of its worker, beyond the Processor methods every processor
// has. A nil field means the processor takes no part in that relay; the
// zero Hooks is a processor with none (drift, scaling, burnrate).
//
// The engine's Worker reads a processor's Hooks once, when it creates the
// processor, and wires them then: nothing is discovered per record, batch
// or evaluation. The functions are called from the worker's goroutine
// only, like every other method of the processor.
type Hooks struct {
	// SetProbes receives, before every Evaluate, the probes of the
	// half-open breaker targets that this SLO tripped (see Probes and
	// Breaker.ProbesFor in the engine); it replaces the previous probes.
	// A key probed since s is judged on [max(now-window, s), now) and on
	// at least the processor's min_samples of it, or its verdict is
	// insufficient_data and the breaker waits; a key with no record at
	// all since s gets no verdict. Set by tail, decay and corrections;
	// nil: the processor judges full windows only, and the worker asks the
	// breaker nothing for it.
	SetProbes func(p Probes)

	// ObserveLate is called for every span the watermark has passed (late:
	// counted, not folded in), with its key after the engine's dimension
	// projection and cardinality guard, whatever the SLO's match. Set by
	// rollup, which counts late spans in its per-minute rows.
	ObserveLate func(key schemas.Key, eventTimeUnixNano int64)

	// TakeJoined returns, after each Evaluate, the corrections the
	// processor attributed in it (see JoinedCorrection), and forgets them.
	// Set by corrections. The worker hands those of the first SLO that
	// has TakeJoined to every CountCorrection of the worker (the others'
	// are taken and dropped, so that a correction counts once).
	TakeJoined func() []JoinedCorrection

	// CountCorrection counts one attributed correction of key at its event
	// time (Unix ns) in the processor's state. Set by rollup. The worker
	// evaluates, at every boundary, the SLOs with TakeJoined before the
	// others, so that the corrections attributed at a boundary are counted
	// before the rollups of that boundary are evaluated, wherever the
	// rollup SLO is in the list.
	CountCorrection func(key schemas.Key, timeUnixNano int64)

	// ObserveUnmatched is called for every on-time span of a tenant the
	// SLO's match selects but whose other dimensions or operation it does
	// not, with its key after the engine's dimension projection and
	// cardinality guard. Set by corrections: a correction joins the span
	// it names among all of its tenant's spans, not only among the SLO's,
	// so that SLOs split by model, variant, service or operation agree on
	// which span a correction corrects. Without it, an SLO that did not
	// see the corrected span fell back from the correction's trace id to
	// its session and attributed it to one of its own spans of that
	// session: a split SLO counted the other SLOs' corrections too.
	ObserveUnmatched func(key schemas.Key, s *schemas.Span)

	// Pending reports whether the processor holds state that Keys does not
	// count (corrections: spans indexed for joining, corrections waiting
	// for the watermark). While any processor has keys or pending state,
	// the worker evaluates every boundary instead of jumping over empty
	// ones. nil: Keys is the whole state.
	Pending func() bool
}
