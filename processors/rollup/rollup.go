// Package rollup makes the per-minute span rollups written to ClickHouse:
// per key and closed event-time minute, the count, errors, tokens (input,
// output, cache read, cache write, reasoning), late spans and a capped sample
// of latencies, times to first token and times per output token for the
// quantile states, and the failed answers (schemas.Answers) by reason. One
// row per (key, minute), emitted once when the watermark passes the
// minute's end, so a replay rewrites the same row.
package rollup

import (
	"cmp"
	"errors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Minute is the rollup width.
const Minute = int64(time.Minute)

// Config configures the rollups.
type Config struct {
	// MaxSamplesPerMinute caps the latencies (and TTFTs) kept per key per
	// minute: beyond it, a uniform sample by span-id hash. Default 2000.
	MaxSamplesPerMinute int
	// Answers defines a failed answer; nil is schemas.DefaultAnswers.
	Answers *schemas.AnswerRule
}

// Processor is the rollup processor of one partition worker.
type Processor struct {
	cfg   Config
	keys  map[schemas.Key]*keyState
	order processors.KeyOrder // scratch

	snapSize snapcodec.SizeHint // the last snapshot's size, for the next one's allocation
}

type keyState struct {
	minutes []minute // sorted by start
	// late counts late spans seen since the key's last emitted row, and
	// corrections those attributed to the key for a minute with no open
	// row (its row already written, or a key without spans: corrections
	// that joined no span); both are reported on the key's next row.
	late, corrections int64
}

type minute struct {
	start                           int64
	n, errors, in, out, corrections int64
	cacheRead, cacheWrite, reason   int64
	// failed answers: all, cut off (length), filtered, empty
	failed, failedLength, failedFilter, empty int64
	durations, ttfts, tpots                   *window.Store
}

// Name is the processor's name: the Kind of the rollups' state id. Not an
// SLO kind (no section of an SLO entry, no verdicts).
const Name = "rollup"

// New returns a rollup processor. It is not an SLO kind
// (processors/registry): the engine runs it under the reserved SLO name
// "_rollup" when `rollups.enabled`; it emits rollups, never verdicts.
func New(cfg Config) (*Processor, error) {
	if cfg.MaxSamplesPerMinute < 1 {
		return nil, errors.New("rollup: max samples per minute must be positive")
	}
	return &Processor{cfg: cfg, keys: map[schemas.Key]*keyState{}}, nil
}

// Interval is one minute.
func (p *Processor) Interval() time.Duration { return time.Minute }

// Keys is the number of keys with open minutes or pending late counts.
func (p *Processor) Keys() int { return len(p.keys) }

// Hooks: the rollup counts late spans (ObserveLate) and the corrections
// the corrections SLO attributed (CountCorrection) in its rows.
func (p *Processor) Hooks() processors.Hooks {
	return processors.Hooks{ObserveLate: p.ObserveLate, CountCorrection: p.CountCorrection}
}

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

// CountCorrection counts a correction the corrections processor attributed
// to key: in the row of its minute when that is still open (the engine
// evaluates the corrections SLOs before the rollups at each boundary, and
// corrections are attributed once the watermark passed their time, so with
// a one-minute corrections interval this is the usual case), else on the
// key's next row.
func (p *Processor) CountCorrection(key schemas.Key, t int64) {
	ks := p.state(key)
	start := t - processors.FloorMod(t, Minute)
	if i, found := slices.BinarySearchFunc(ks.minutes, start, func(m minute, t int64) int { return cmp.Compare(m.start, t) }); found {
		ks.minutes[i].corrections++
		return
	}
	ks.corrections++
}

// ObserveLate counts a late span on the key's next row.
func (p *Processor) ObserveLate(key schemas.Key, _ int64) {
	p.state(key).late++
}

func (p *Processor) state(key schemas.Key) *keyState {
	ks := p.keys[key]
	if ks == nil {
		ks = &keyState{}
		p.keys[key] = ks
	}
	return ks
}

// ObserveSpan adds the span to its minute.
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	ks := p.state(key)
	start := processors.FloorTo(s.EndUnixNano, Minute)
	i, found := slices.BinarySearchFunc(ks.minutes, start, func(m minute, t int64) int { return cmp.Compare(m.start, t) })
	if !found {
		d, _ := window.New(Minute, p.cfg.MaxSamplesPerMinute)
		t, _ := window.New(Minute, p.cfg.MaxSamplesPerMinute)
		tp, _ := window.New(Minute, p.cfg.MaxSamplesPerMinute)
		ks.minutes = slices.Insert(ks.minutes, i, minute{start: start, durations: d, ttfts: t, tpots: tp})
	}
	m := &ks.minutes[i]
	m.n++
	if s.Error {
		m.errors++
	}
	switch p.cfg.Answers.Classify(s) {
	case schemas.AnswerOK:
	case schemas.AnswerLength:
		m.failed++
		m.failedLength++
	case schemas.AnswerContentFilter:
		m.failed++
		m.failedFilter++
	case schemas.AnswerEmpty:
		m.failed++
		m.empty++
	default:
		m.failed++
	}
	if s.Has&schemas.HasInputTokens != 0 {
		m.in += s.InputTokens
	}
	if s.Has&schemas.HasOutputTokens != 0 {
		m.out += s.OutputTokens
	}
	if s.Has&schemas.HasCacheReadTokens != 0 {
		m.cacheRead += s.CacheReadTokens
	}
	if s.Has&schemas.HasCacheWriteTokens != 0 {
		m.cacheWrite += s.CacheWriteTokens
	}
	if s.Has&schemas.HasReasoningTokens != 0 {
		m.reason += s.ReasoningTokens
	}
	h := processors.SpanHash(s)
	m.durations.Add(window.Sample{T: s.EndUnixNano, V: s.DurationMs, H: h})
	if s.Has&schemas.HasTTFT != 0 {
		m.ttfts.Add(window.Sample{T: s.EndUnixNano, V: s.TTFTMs, H: h})
	}
	if s.Has&schemas.HasTPOT != 0 {
		m.tpots.Add(window.Sample{T: s.EndUnixNano, V: s.TPOTMs, H: h})
	}
}

// Evaluate emits a row for every minute that ended at or before now, in
// key order, and forgets it. Rows carry the corrections attributed to
// their key and minute (CountCorrection). Late spans and corrections whose
// minute's row is already written are carried to the key's next row, or,
// when the key has no open minute, to a row of their own for the minute
// just closed (no spans, only those counts).
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	var buf []window.Sample
	for _, k := range processors.SortedKeys(p.keys, &p.order) {
		ks := p.keys[k]
		done := 0
		for done < len(ks.minutes) && ks.minutes[done].start+Minute <= now {
			m := &ks.minutes[done]
			r := schemas.Rollup{Key: k, MinuteUnixNano: m.start, N: m.n, Errors: m.errors, InputTokens: m.in, OutputTokens: m.out,
				Corrections: m.corrections, CacheReadTokens: m.cacheRead, CacheWriteTokens: m.cacheWrite, ReasoningTokens: m.reason,
				FailedAnswers: m.failed, FailedLength: m.failedLength, FailedContentFilter: m.failedFilter, EmptyAnswers: m.empty}
			buf, _ = m.durations.Collect(m.start, m.start+Minute, buf[:0])
			r.DurationsMs = values(buf)
			buf, _ = m.ttfts.Collect(m.start, m.start+Minute, buf[:0])
			r.TTFTsMs = values(buf)
			buf, _ = m.tpots.Collect(m.start, m.start+Minute, buf[:0])
			r.TPOTsMs = values(buf)
			if done == 0 {
				r.LateSpans, r.Corrections = ks.late, r.Corrections+ks.corrections
				ks.late, ks.corrections = 0, 0
			}
			emit.Rollup(r)
			done++
		}
		if done == 0 && (ks.late > 0 || ks.corrections > 0) && len(ks.minutes) == 0 {
			// Only carried counts since the last row: report them on a row
			// of their own for the minute just closed (no row of the key
			// can exist for it: it would have been written now).
			emit.Rollup(schemas.Rollup{Key: k, MinuteUnixNano: now - Minute, LateSpans: ks.late, Corrections: ks.corrections})
			ks.late, ks.corrections = 0, 0
		}
		ks.minutes = slices.Delete(ks.minutes, 0, done)
		if len(ks.minutes) == 0 && ks.late == 0 && ks.corrections == 0 {
			delete(p.keys, k)
		}
	}
}

// values returns the samples' values in the samples' canonical order.
func values(xs []window.Sample) []float64 {
	if len(xs) == 0 {
		return nil
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x.V
	}
	return out
}
