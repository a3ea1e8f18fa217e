// Package rollup makes the per-minute span rollups written to ClickHouse:
// per key and closed event-time minute, the count, errors, tokens, late
// spans and a capped sample of latencies and times to first token for the
// quantile states. One row per (key, minute), emitted once when the
// watermark passes the minute's end, so a replay rewrites the same row.
package rollup

import (
	"encoding/binary"
	"errors"
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
}

// Processor is the rollup processor of one partition worker.
type Processor struct {
	cfg  Config
	keys map[schemas.Key]*keyState
}

type keyState struct {
	minutes []minute // sorted by start
	// late counts late spans seen since the key's last emitted row; they
	// are reported on the next row.
	late int64
}

type minute struct {
	start              int64
	n, errors, in, out int64
	durations, ttfts   *window.Store
}

// New returns a rollup processor.
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

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

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
	start := s.EndUnixNano - mod(s.EndUnixNano, Minute)
	i, found := slices.BinarySearchFunc(ks.minutes, start, func(m minute, t int64) int { return cmp64(m.start, t) })
	if !found {
		d, _ := window.New(Minute, p.cfg.MaxSamplesPerMinute)
		t, _ := window.New(Minute, p.cfg.MaxSamplesPerMinute)
		ks.minutes = slices.Insert(ks.minutes, i, minute{start: start, durations: d, ttfts: t})
	}
	m := &ks.minutes[i]
	m.n++
	if s.Error {
		m.errors++
	}
	if s.Has&schemas.HasInputTokens != 0 {
		m.in += s.InputTokens
	}
	if s.Has&schemas.HasOutputTokens != 0 {
		m.out += s.OutputTokens
	}
	h := processors.SpanHash(s)
	m.durations.Add(window.Sample{T: s.EndUnixNano, V: s.DurationMs, H: h})
	if s.Has&schemas.HasTTFT != 0 {
		m.ttfts.Add(window.Sample{T: s.EndUnixNano, V: s.TTFTMs, H: h})
	}
}

// Evaluate emits a row for every minute that ended at or before now, in
// key order, and forgets it.
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	keys := make([]schemas.Key, 0, len(p.keys))
	for k := range p.keys {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b schemas.Key) int { return cmpString(a.String(), b.String()) })
	var buf []window.Sample
	for _, k := range keys {
		ks := p.keys[k]
		done := 0
		for done < len(ks.minutes) && ks.minutes[done].start+Minute <= now {
			m := &ks.minutes[done]
			r := schemas.Rollup{Key: k, MinuteUnixNano: m.start, N: m.n, Errors: m.errors, InputTokens: m.in, OutputTokens: m.out}
			buf, _ = m.durations.Collect(m.start, m.start+Minute, buf[:0])
			r.DurationsMs = values(buf)
			buf, _ = m.ttfts.Collect(m.start, m.start+Minute, buf[:0])
			r.TTFTsMs = values(buf)
			if done == 0 {
				r.LateSpans = ks.late
				ks.late = 0
			}
			emit.Rollup(r)
			done++
		}
		if done == 0 && ks.late > 0 && len(ks.minutes) == 0 {
			// Only late spans since the last row: report them on a row of
			// their own for the minute just closed.
			emit.Rollup(schemas.Rollup{Key: k, MinuteUnixNano: now - Minute, LateSpans: ks.late})
			ks.late = 0
		}
		ks.minutes = slices.Delete(ks.minutes, 0, done)
		if len(ks.minutes) == 0 && ks.late == 0 {
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

// MarshalBinary snapshots every open minute.
func (p *Processor) MarshalBinary() ([]byte, error) {
	keys := make([]schemas.Key, 0, len(p.keys))
	for k := range p.keys {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b schemas.Key) int { return cmpString(a.String(), b.String()) })
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(keys)))
	for _, k := range keys {
		ks := p.keys[k]
		b = appendString(b, k.String())
		b = binary.LittleEndian.AppendUint64(b, uint64(ks.late))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ks.minutes)))
		for _, m := range ks.minutes {
			for _, v := range []int64{m.start, m.n, m.errors, m.in, m.out} {
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
			b = m.durations.AppendBinary(b)
			b = m.ttfts.AppendBinary(b)
		}
	}
	return b, nil
}

// ErrCorrupt is returned by UnmarshalBinary on a bad snapshot.
var ErrCorrupt = errors.New("rollup: corrupt snapshot")

// UnmarshalBinary restores a snapshot.
func (p *Processor) UnmarshalBinary(b []byte) error {
	p.keys = map[schemas.Key]*keyState{}
	if len(b) < 4 {
		return ErrCorrupt
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	for i := 0; i < n; i++ {
		ks, err := readString(&b)
		if err != nil {
			return err
		}
		k, err := schemas.ParseKey(ks)
		if err != nil || len(b) < 12 {
			return ErrCorrupt
		}
		st := &keyState{late: int64(binary.LittleEndian.Uint64(b))}
		nm := int(binary.LittleEndian.Uint32(b[8:]))
		b = b[12:]
		if nm > len(b)/40 {
			return ErrCorrupt
		}
		for j := 0; j < nm; j++ {
			if len(b) < 40 {
				return ErrCorrupt
			}
			var v [5]int64
			for x := range v {
				v[x] = int64(binary.LittleEndian.Uint64(b[8*x:]))
			}
			b = b[40:]
			m := minute{start: v[0], n: v[1], errors: v[2], in: v[3], out: v[4], durations: &window.Store{}, ttfts: &window.Store{}}
			if b, err = m.durations.DecodeBinary(b); err != nil {
				return ErrCorrupt
			}
			if b, err = m.ttfts.DecodeBinary(b); err != nil {
				return ErrCorrupt
			}
			st.minutes = append(st.minutes, m)
		}
		p.keys[k] = st
	}
	if len(b) != 0 {
		return ErrCorrupt
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func readString(b *[]byte) (string, error) {
	if len(*b) < 4 {
		return "", ErrCorrupt
	}
	n := int(binary.LittleEndian.Uint32(*b))
	if n > len(*b)-4 {
		return "", ErrCorrupt
	}
	s := string((*b)[4 : 4+n])
	*b = (*b)[4+n:]
	return s, nil
}

func mod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
