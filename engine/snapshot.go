package engine

import (
	"errors"
	"fmt"
)

// snapshotVersion is the first byte of every worker snapshot.
const snapshotVersion = 1

const minInt64 = -1 << 63

// MarshalBinary snapshots the whole worker: its position in the keyed
// partition, watermarks, guard, counters, every processor and the breaker.
// RestoreWorker continues from it exactly.
func (w *Worker) MarshalBinary() ([]byte, error) {
	e := &encoder{b: []byte{snapshotVersion}}
	e.str(w.cfg.ConfigVersion)
	e.u32(uint32(w.partition))
	e.i64(w.nextOffset)
	e.i64(w.watermark)
	e.i64(w.earliest)
	e.str(w.lastTopics)
	w.wm.appendBinary(e)
	w.guard.appendBinary(e)
	for _, v := range []int64{w.stats.Records, w.stats.Duplicates, w.stats.Heartbeats, w.stats.Spans, w.stats.LateSpans,
		w.stats.Corrections, w.stats.LateCorrections, w.stats.Evaluations, w.stats.Verdicts, w.stats.Commands} {
		e.i64(v)
	}
	e.u32(uint32(len(w.slos)))
	for i := range w.slos {
		s := &w.slos[i]
		b, err := s.proc.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("engine: snapshot SLO %q: %w", s.spec.Meta.SLO, err)
		}
		e.str(s.spec.Meta.SLO)
		e.i64(s.next)
		e.bytes(b)
	}
	var bb []byte
	if w.breaker != nil {
		var err error
		if bb, err = w.breaker.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("engine: snapshot breaker: %w", err)
		}
	}
	e.bytes(bb)
	if !w.out.Empty() {
		return nil, errors.New("engine: snapshot with output not yet taken")
	}
	return e.b, nil
}

// RestoreWorker makes a worker from a snapshot written by MarshalBinary
// under cfg. When the snapshot was taken under another ConfigVersion, only
// the position (offsets, watermarks, dedup marks) and the breaker are
// restored; the processors start empty, as their old state may not fit the
// new parameters.
// restoredProcessors says which happened.
func RestoreWorker(cfg WorkerConfig, partition int32, snap []byte) (w *Worker, restoredProcessors bool, err error) {
	w, err = NewWorker(cfg, partition)
	if err != nil {
		return nil, false, err
	}
	if len(snap) == 0 || snap[0] != snapshotVersion {
		return nil, false, fmt.Errorf("%w: unknown snapshot version", ErrCorruptSnapshot)
	}
	d := &decoder{b: snap[1:]}
	version := d.str()
	if p := int32(d.u32()); d.err == nil && p != partition {
		return nil, false, fmt.Errorf("%w: snapshot of partition %d restored into %d", ErrCorruptSnapshot, p, partition)
	}
	w.nextOffset = d.i64()
	w.watermark = d.i64()
	w.earliest = d.i64()
	w.lastTopics = d.str()
	w.wm.decodeBinary(d)
	if d.err == nil {
		d.err = w.guard.decodeBinary(d)
	}
	for _, p := range []*int64{&w.stats.Records, &w.stats.Duplicates, &w.stats.Heartbeats, &w.stats.Spans, &w.stats.LateSpans,
		&w.stats.Corrections, &w.stats.LateCorrections, &w.stats.Evaluations, &w.stats.Verdicts, &w.stats.Commands} {
		*p = d.i64()
	}
	n := int(d.u32())
	if d.err != nil {
		return nil, false, d.err
	}
	same := version == cfg.ConfigVersion && n == len(w.slos)
	type saved struct {
		name string
		next int64
		b    []byte
	}
	var slos []saved
	for i := 0; i < n && d.err == nil; i++ {
		slos = append(slos, saved{name: d.str(), next: d.i64(), b: d.bytes()})
	}
	breaker := d.bytes()
	if d.err != nil {
		return nil, false, d.err
	}
	for i := range slos {
		if same && slos[i].name != w.slos[i].spec.Meta.SLO {
			same = false
		}
	}
	// The breaker is restored even across a configuration change: its
	// per-target command versions must never go back, or gateways would
	// reject every later command.
	if w.breaker != nil && len(breaker) > 0 {
		if err := w.breaker.UnmarshalBinary(breaker); err != nil {
			return nil, false, fmt.Errorf("engine: restore breaker: %w", err)
		}
	}
	if !same {
		// Position only: evaluations restart at the first boundary after
		// the watermark, with empty windows.
		w.watermark = minInt64
		return w, false, nil
	}
	for i := range slos {
		s := &w.slos[i]
		s.next = slos[i].next
		if err := s.proc.UnmarshalBinary(slos[i].b); err != nil {
			return nil, false, fmt.Errorf("engine: restore SLO %q: %w", s.spec.Meta.SLO, err)
		}
	}
	return w, true, nil
}
