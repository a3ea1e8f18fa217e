package engine

import (
	"errors"
	"fmt"
	"math"

	"github.com/fusebox-dev/fusebox/processors/snapcodec"
)

// ErrCorruptSnapshot is returned when a checkpoint cannot be decoded.
var ErrCorruptSnapshot = errors.New("engine: corrupt snapshot")

// snapshotFormat names and versions the worker snapshot.
// Version 3 added the guard's live keys (GuardConfig.MaxKeys); version 2
// snapshots are still restored.
var snapshotFormat = snapcodec.Format{Name: "fusebox.worker", Version: 3, Err: ErrCorruptSnapshot}

// snapshotFormatV2 is the layout before the guard's live keys.
var snapshotFormatV2 = snapcodec.Format{Name: "fusebox.worker", Version: 2, Err: ErrCorruptSnapshot}

// MarshalBinary snapshots the whole worker: its position in the keyed
// partition, watermarks, guard, counters, every processor and the breaker.
// RestoreWorker continues from it exactly. The output must have been taken
// (TakeOutput) first: a snapshot covers what the sinks already have.
func (w *Worker) MarshalBinary() ([]byte, error) {
	if !w.out.Empty() {
		return nil, errors.New("engine: snapshot with output not yet taken")
	}
	procs := make([][]byte, len(w.slos))
	for i := range w.slos {
		b, err := w.slos[i].proc.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("engine: snapshot SLO %q: %w", w.slos[i].spec.Meta.SLO, err)
		}
		procs[i] = b
	}
	var bb []byte
	if w.breaker != nil {
		var err error
		if bb, err = w.breaker.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("engine: snapshot breaker: %w", err)
		}
	}
	return snapshotFormat.Marshal(func(e *snapcodec.Encoder) {
		e.String(w.cfg.ConfigVersion)
		e.U32(uint32(w.partition))
		e.I64(w.nextOffset)
		e.I64(w.watermark)
		e.I64(w.earliest)
		e.String(w.lastTopics)
		w.wm.appendBinary(e)
		w.guard.appendBinary(e)
		for _, v := range w.counters() {
			e.I64(*v)
		}
		e.Count(len(w.slos))
		for i := range w.slos {
			e.String(w.slos[i].spec.Meta.SLO)
			e.I64(w.slos[i].next)
			e.String(string(procs[i]))
		}
		e.String(string(bb))
	}), nil
}

// counters lists the persisted counters in snapshot order.
func (w *Worker) counters() []*int64 {
	return []*int64{&w.stats.Records, &w.stats.Duplicates, &w.stats.Heartbeats, &w.stats.Spans, &w.stats.LateSpans,
		&w.stats.Corrections, &w.stats.LateCorrections, &w.stats.Evaluations, &w.stats.Verdicts, &w.stats.Commands}
}

// RestoreWorker makes a worker from a snapshot written by MarshalBinary
// under cfg. When the snapshot was taken under another ConfigVersion (or
// with other SLOs), only the position (offsets, watermarks, dedup marks) and
// the breaker are restored; the processors start empty, as their old state
// may not fit the new parameters. restoredProcessors says which happened.
// Snapshots of the previous layout (version 2, before the key bound) are
// restored too; their live keys are learnt again from the next records.
func RestoreWorker(cfg WorkerConfig, partition int32, snap []byte) (w *Worker, restoredProcessors bool, err error) {
	r, err := decodeSnapshot(cfg, partition, snap, snapshotFormat, true)
	if err != nil {
		r2, err2 := decodeSnapshot(cfg, partition, snap, snapshotFormatV2, false)
		if err2 != nil {
			return nil, false, err
		}
		r = r2
	}
	return r.finish(cfg)
}

// restored is a decoded snapshot, the processors not yet restored.
type restored struct {
	w       *Worker
	version string
	slos    []savedSLO
	breaker []byte
}

type savedSLO struct {
	name string
	next int64
	b    []byte
}

func decodeSnapshot(cfg WorkerConfig, partition int32, snap []byte, f snapcodec.Format, withKeys bool) (*restored, error) {
	w, err := NewWorker(cfg, partition)
	if err != nil {
		return nil, err
	}
	r := &restored{w: w}
	err = f.Unmarshal(snap, func(d *snapcodec.Decoder) {
		r.version = d.String()
		if p := int32(d.U32()); d.Err() == nil && p != partition {
			d.Failf("snapshot of partition %d restored into %d", p, partition)
		}
		w.nextOffset = d.I64()
		w.watermark = d.I64()
		w.earliest = d.I64()
		w.lastTopics = d.String()
		w.wm.decodeBinary(d)
		w.guard.decodeBinary(d, withKeys)
		for _, p := range w.counters() {
			*p = d.I64()
		}
		n := d.Count(16)
		for i := 0; i < n && d.Err() == nil; i++ {
			r.slos = append(r.slos, savedSLO{name: d.String(), next: d.I64(), b: []byte(d.String())})
		}
		r.breaker = []byte(d.String())
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (r *restored) finish(cfg WorkerConfig) (*Worker, bool, error) {
	w := r.w
	// The breaker is restored even across a configuration change: its
	// per-target command versions must never go back, or gateways would
	// reject every later command.
	if w.breaker != nil && len(r.breaker) > 0 {
		if err := w.breaker.UnmarshalBinary(r.breaker); err != nil {
			return nil, false, fmt.Errorf("engine: restore breaker: %w", err)
		}
	}
	same := r.version == cfg.ConfigVersion && len(r.slos) == len(w.slos)
	for i := 0; same && i < len(r.slos); i++ {
		same = r.slos[i].name == w.slos[i].spec.Meta.SLO
	}
	if !same {
		// Position only: evaluations restart at the first boundary after
		// the watermark, with empty windows.
		w.watermark = math.MinInt64
		w.earliest = math.MaxInt64
		return w, false, nil
	}
	for i := range r.slos {
		s := &w.slos[i]
		s.next = r.slos[i].next
		if err := s.proc.UnmarshalBinary(r.slos[i].b); err != nil {
			return nil, false, fmt.Errorf("engine: restore SLO %q: %w", s.spec.Meta.SLO, err)
		}
	}
	return w, true, nil
}
