// Package processors defines what every SLO processor implements and the
// pieces they share: the Processor interface, verdict construction
// (Meta.NewVerdict), span identity hashing (SpanHash), the watched span
// metrics (Metric), configuration checks (Check, ConfigError), sorted key
// iteration (SortedKeys) and slot arithmetic (FloorTo, DropSlotsBefore).
// The event-time window store is processors/window; the snapshot codec
// processors/snapcodec.
//
// The SLO processors live in subpackages — tail, drift, decay, scaling,
// corrections, burnrate — and processors/registry lists them: an SLO
// entry's section names one. Two more are not SLO kinds: rollup (per-minute
// rows for ClickHouse, a Processor without verdicts) and breaker (verdicts
// in, fuse commands out; the engine's Breaker, not a Processor).
//
// A processor is pure: it reads no clock, does no I/O and keeps no global
// state. The engine creates one instance per SLO per partition worker and
// calls it from that worker's goroutine only, so implementations need no
// locks. The same calls in the same order give the same verdicts, bit for
// bit; and because windows are sets (see window.Store), calls that differ
// only in the order of records inside the allowed lateness give the same
// verdicts too.
package processors

import (
	"encoding"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Emitter collects what processors produce during an evaluation.
type Emitter interface {
	Verdict(v schemas.Verdict)
	Rollup(r schemas.Rollup)
}

// Processor is one SLO's processor inside one partition worker. It owns the
// state of every key the worker routes to it.
type Processor interface {
	// Interval is how often Evaluate runs, in event time. Evaluation
	// boundaries are the multiples of Interval since the Unix epoch.
	Interval() time.Duration

	// ObserveSpan folds one on-time span into the state of key, which is
	// the span's key after the engine's dimension projection and
	// cardinality guard (use it, not s.Key).
	ObserveSpan(key schemas.Key, s *schemas.Span)

	// ObserveCorrection folds one on-time correction into the state.
	// Processors that do not use corrections ignore it.
	ObserveCorrection(c *schemas.Correction)

	// Evaluate judges every key whose window ending at now holds data,
	// emitting one verdict per (key, metric) — insufficient_data included —
	// and drops state that no future window can use. now is a boundary the
	// watermark has passed: no on-time record with an event time before now
	// will arrive any more.
	Evaluate(now int64, emit Emitter)

	// Keys is the number of keys holding state, for memory accounting.
	Keys() int

	// Hooks are the processor's relays with the engine and the other
	// processors (probes, late spans, corrections into rollups); the zero
	// Hooks for none. The engine calls it once per instance, right after
	// creating it.
	Hooks() Hooks

	// MarshalBinary and UnmarshalBinary snapshot and restore the whole
	// state for the engine's checkpoints; a restored processor continues
	// exactly as the original would have.
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// JoinedCorrection is a correction the corrections processor attributed
// (Hooks.TakeJoined) to a key: joined to one of its spans (first correction of that span), or
// unjoined and counted under the correction's own tenant, model and
// variant.
type JoinedCorrection struct {
	Key          schemas.Key
	TimeUnixNano int64
}

// Meta is what the engine tells a processor about the SLO it serves.
type Meta struct {
	// SLO is the SLO's name in the configuration file.
	SLO string
	// ConfigVersion is the configuration's version; it is part of every
	// verdict id, so changing the configuration starts new ids.
	ConfigVersion string
	// Answers is the deployment's definition of a failed answer (the SLO
	// file's answers section); nil is schemas.DefaultAnswers.
	Answers *schemas.AnswerRule
}

// AnswersUser is implemented by a Config that may count failed answers
// (schemas.Answers): with UsesAnswers true, the SLO's state id includes
// the answers section, and an answers section that defines none is a
// configuration error.
type AnswersUser interface {
	UsesAnswers() bool
}

// NewVerdict starts a verdict with its deterministic id and window filled
// in; the caller sets the status, value and numbers.
func (m Meta) NewVerdict(processor, metric string, key schemas.Key, windowStart, windowEnd int64) schemas.Verdict {
	return schemas.Verdict{
		ID:                  schemas.VerdictID(processor, m.SLO, metric, key, windowEnd, m.ConfigVersion),
		Processor:           processor,
		SLO:                 m.SLO,
		Metric:              metric,
		Key:                 key,
		WindowStartUnixNano: windowStart,
		WindowEndUnixNano:   windowEnd,
		ConfigVersion:       m.ConfigVersion,
	}
}

// SpanHash is a 64-bit hash of the span's identity (trace id, span id),
// independent of arrival order. Window stores keep the records with the
// smallest hashes when a slot is full, which is a uniform sample that does
// not depend on the order records came in.
func SpanHash(s *schemas.Span) uint64 {
	return hashIDs(s.TraceID[:], s.SpanID[:])
}

// CorrectionHash is SpanHash for corrections: a hash of the event id.
func CorrectionHash(c *schemas.Correction) uint64 {
	return hashIDs([]byte(c.EventID), nil)
}

// hashIDs is FNV-1a 64 followed by a SplitMix64 finaliser so that ids that
// differ only in their last bytes spread over the whole range.
func hashIDs(a, b []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, c := range a {
		h ^= uint64(c)
		h *= prime
	}
	for _, c := range b {
		h ^= uint64(c)
		h *= prime
	}
	return Avalanche(h)
}

// Avalanche is the SplitMix64 finaliser: a bijection on uint64 under which
// every input bit affects every output bit, applied to FNV-1a sums so that
// inputs differing only in their last bytes spread over the whole range.
func Avalanche(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
