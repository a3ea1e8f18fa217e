package engine

import (
	"errors"
	"fmt"
	"math"

	"github.com/fusebox-dev/fusebox/processors/snapcodec"
)

// ErrCorruptSnapshot is returned when a checkpoint cannot be decoded.
var ErrCorruptSnapshot = errors.New("engine: corrupt snapshot")

// ErrSnapshotVersion is returned for a checkpoint in a format this fusebox
// does not read (written by a much older or a newer fusebox).
var ErrSnapshotVersion = errors.New("engine: checkpoint format not supported")

// snapshotName names the worker snapshot. Version 6 adds, after the idle
// durations, each source's last data timestamp (the Kafka timestamp of its
// newest data record: the all-idle advance measures the silence from it,
// see watermarks.silent); version 5 is still read (the timestamps start
// unknown, and the idle markers' own stamps serve until each source's next
// data record). Version 5 adds, after the
// effect judge's state, each source's idle duration (how long the router
// said it had been silent: the all-idle watermark advances by it, see
// watermarks.current); version 4 is still read (the idle durations start
// at 0 and the next idle markers stamp them again). Version 4 adds the effect
// judge's state (pending judgements) after the breaker's; version 3 is
// still read (the judge starts empty: commands issued before the upgrade
// are not judged, those after are). Version 3 keeps the guard's live
// keys (GuardConfig.MaxKeys), state per SLO under its name and state id, and
// the breaker's state id; version 2 (up to wave 2) kept one config version
// for all and no live keys, and is still read (its live keys are learnt
// again from the next records).
const snapshotName = "fusebox.worker"

var (
	snapshotFormat   = snapcodec.Format{Name: snapshotName, Version: 6, Err: ErrCorruptSnapshot}
	snapshotFormatV5 = snapcodec.Format{Name: snapshotName, Version: 5, Err: ErrCorruptSnapshot}
	snapshotFormatV4 = snapcodec.Format{Name: snapshotName, Version: 4, Err: ErrCorruptSnapshot}
	snapshotFormatV3 = snapcodec.Format{Name: snapshotName, Version: 3, Err: ErrCorruptSnapshot}
	snapshotFormatV2 = snapcodec.Format{Name: snapshotName, Version: 2, Err: ErrCorruptSnapshot}
)

// MarshalBinary snapshots the whole worker: its position in the keyed
// partition, watermarks, guard, counters, every processor and the breaker,
// in format version 6, or 4 when WorkerConfig.CheckpointVersion says so.
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
	var eb []byte
	if w.effects != nil {
		var err error
		if eb, err = w.effects.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("engine: snapshot effect judge: %w", err)
		}
	}
	format := snapshotFormat
	if w.cfg.CheckpointVersion == snapshotFormatV4.Version {
		format = snapshotFormatV4
	}
	size := len(bb) + len(eb) + 4096 // the parts, and room for what goes between them
	for i, b := range procs {
		// The part, its name and state id, their lengths and the next boundary.
		size += len(b) + len(w.slos[i].spec.Meta.SLO) + len(w.slos[i].spec.StateID) + 32
	}
	return format.Marshal(func(e *snapcodec.Encoder) {
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
		// One allocation for the parts: they are most of the checkpoint
		// (1.9 GB at 100k keys), and growing to them copies it all again.
		// Made here, after the position, because the guard's keys alone
		// are megabytes at 100k keys (more than any fixed allowance).
		e.Grow(size)
		e.Count(len(w.slos))
		for i := range w.slos {
			e.String(w.slos[i].spec.Meta.SLO)
			e.String(w.slos[i].spec.StateID)
			e.I64(w.slos[i].next)
			e.Blob(procs[i])
		}
		e.String(w.cfg.BreakerStateID)
		e.Blob(bb)
		e.Blob(eb)
		if format.Version >= snapshotFormat.Version {
			w.wm.appendIdleFor(e)
			w.wm.appendLastAt(e)
		}
	}), nil
}

// counters lists the persisted counters in snapshot order.
func (w *Worker) counters() []*int64 {
	return []*int64{&w.stats.Records, &w.stats.Duplicates, &w.stats.Heartbeats, &w.stats.Spans, &w.stats.LateSpans,
		&w.stats.Corrections, &w.stats.LateCorrections, &w.stats.Evaluations, &w.stats.Verdicts, &w.stats.Commands}
}

// RestoreWorker makes a worker from a snapshot written by MarshalBinary,
// under cfg, which may differ from the configuration the snapshot was taken
// under (an edited SLO file). The position (offsets, watermarks, dedup
// marks, guard, counters) is always restored. Then, per SLO of cfg, by
// name: its state is kept when the snapshot has an SLO of that name with the
// same StateID (what its windows hold did not change: a budget, an alpha, a
// limit may have), and reset otherwise; an SLO of the snapshot that cfg no
// longer has is dropped. A reset or added SLO evaluates first at the first
// boundary after the restored watermark, with empty windows. The breaker's
// state is kept unless its BreakerStateID (the target dimensions) changed.
// The report says what happened.
//
// The effect judge's state is always restored (it carries no
// configuration: see processors/effect). Snapshots of format version 5
// (before the last data timestamps) restore with them unknown: until a
// source's next data record, its idle markers' own stamps measure its
// silence (as format 5's fusebox did). Snapshots of format version 4
// (before the idle durations) restore with every source's idle duration
// 0: an all-idle partition's watermark stays where it was until the
// router's next idle markers. Snapshots of format version 3
// (before the effect judge) restore with an empty judge. Snapshots of
// format version 2 (before per-SLO state) are read too: an
// SLO's state is kept when the whole configuration version and the SLO's
// name are the same, the breaker always. Other format versions are refused
// with ErrSnapshotVersion.
func RestoreWorker(cfg WorkerConfig, partition int32, snap []byte) (w *Worker, rep RestoreReport, err error) {
	if w, err = NewWorker(cfg, partition); err != nil {
		return nil, rep, err
	}
	type saved struct {
		name, stateID string
		next          int64
		b             []byte
	}
	var (
		version   string
		slos      []saved
		breakerID string
		breaker   []byte
		effects   []byte
	)
	format, v2, v3, v4, v5 := snapshotFormat, false, false, false, false
	if ver, ok := snapshotVersion(snap); ok && ver == snapshotFormatV2.Version {
		format, v2 = snapshotFormatV2, true
	} else if ok && ver == snapshotFormatV3.Version {
		format, v3 = snapshotFormatV3, true
	} else if ok && ver == snapshotFormatV4.Version {
		format, v4 = snapshotFormatV4, true
	} else if ok && ver == snapshotFormatV5.Version {
		format, v5 = snapshotFormatV5, true
	} else if ok && ver != snapshotFormat.Version {
		return nil, rep, fmt.Errorf("%w: partition %d's checkpoint is %s format version %d; this fusebox reads versions %d to %d. "+
			"To start this partition's state empty, give the deployment a new topics.state",
			ErrSnapshotVersion, partition, snapshotName, ver, snapshotFormatV2.Version, snapshotFormat.Version)
	}
	err = format.Unmarshal(snap, func(d *snapcodec.Decoder) {
		version = d.String()
		if p := int32(d.U32()); d.Err() == nil && p != partition {
			d.Failf("snapshot of partition %d restored into %d", p, partition)
		}
		w.nextOffset = d.I64()
		w.watermark = d.I64()
		w.earliest = d.I64()
		w.lastTopics = d.String()
		w.wm.decodeBinary(d)
		w.guard.decodeBinary(d, !v2)
		for _, p := range w.counters() {
			*p = d.I64()
		}
		n := d.Count(16)
		for i := 0; i < n && d.Err() == nil; i++ {
			s := saved{name: d.String()}
			if !v2 {
				s.stateID = d.String()
			}
			s.next, s.b = d.I64(), []byte(d.String())
			slos = append(slos, s)
		}
		if !v2 {
			breakerID = d.String()
		}
		breaker = []byte(d.String())
		if !v2 && !v3 {
			effects = []byte(d.String())
		}
		if !v2 && !v3 && !v4 {
			w.wm.decodeIdleFor(d)
		}
		if !v2 && !v3 && !v4 && !v5 {
			w.wm.decodeLastAt(d)
		}
	})
	if err != nil {
		return nil, rep, err
	}
	rep.FormatVersion = int(format.Version)
	if v2 {
		// Version 2 knew no state ids: what a version-2 fusebox would
		// have kept is kept.
		breakerID = cfg.BreakerStateID
		for i := range slos {
			slos[i].stateID = "\x00v2"
			if version == cfg.ConfigVersion {
				slos[i].stateID = w.specStateID(slos[i].name)
			}
		}
	}
	// The breaker is restored unless its targets changed shape: its
	// per-target command versions must never go back, or gateways would
	// reject every later command. (A reset breaker's targets are new keys;
	// their versions start from event time, above any earlier command.)
	if w.breaker != nil && len(breaker) > 0 {
		if breakerID == cfg.BreakerStateID {
			if err := w.breaker.UnmarshalBinary(breaker); err != nil {
				return nil, rep, partError(partition, "the breaker's state", err)
			}
			rep.Breaker = Kept
		} else {
			rep.Breaker = Reset
		}
	}
	if w.effects != nil && len(effects) > 0 {
		if err := w.effects.UnmarshalBinary(effects); err != nil {
			return nil, rep, partError(partition, "the effect judge's state", err)
		}
	}
	old := map[string]saved{}
	for _, s := range slos {
		old[s.name] = s
	}
	for i := range w.slos {
		s := &w.slos[i]
		name := s.spec.Meta.SLO
		o, ok := old[name]
		delete(old, name)
		switch {
		case ok && o.stateID == s.spec.StateID:
			s.next = o.next
			if err := s.proc.UnmarshalBinary(o.b); err != nil {
				return nil, rep, partError(partition, fmt.Sprintf("SLO %q's state", name), err)
			}
			rep.SLOs = append(rep.SLOs, SLOChange{SLO: name, Change: Kept})
		default:
			// Empty windows, evaluated from the first boundary after the
			// watermark: no burst of evaluations over the past.
			if w.watermark != math.MinInt64 {
				s.next = floorDiv(w.watermark, s.every)*s.every + s.every
			}
			c := Added
			if ok {
				c = Reset
			}
			rep.SLOs = append(rep.SLOs, SLOChange{SLO: name, Change: c})
		}
	}
	for _, s := range slos {
		if _, gone := old[s.name]; gone {
			rep.SLOs = append(rep.SLOs, SLOChange{SLO: s.name, Change: Removed})
		}
	}
	return w, rep, nil
}

// partError is the error of a part of a checkpoint (an SLO's, the
// breaker's or the effect judge's state) that does not decode: damaged, or
// in a format this fusebox does not read. Like a damaged or unsupported
// checkpoint it is refused — the partition does not start rather than
// drop state silently (docs/state-and-upgrades.md, "Upgrades") — and it wraps
// ErrCorruptSnapshot and the part's own error.
func partError(partition int32, part string, err error) error {
	return fmt.Errorf("%w: partition %d's checkpoint: %s does not decode (%w). "+
		"To start this partition's state empty, give the deployment a new topics.state", ErrCorruptSnapshot, partition, part, err)
}

func (w *Worker) specStateID(name string) string {
	for i := range w.slos {
		if w.slos[i].spec.Meta.SLO == name {
			return w.slos[i].spec.StateID
		}
	}
	return ""
}

// snapshotVersion reads the format version of a worker snapshot's header;
// ok is false when b does not start with one.
func snapshotVersion(b []byte) (v uint8, ok bool) {
	d := snapcodec.NewDecoder(b)
	if name := d.String(); d.Err() != nil || name != snapshotName {
		return 0, false
	}
	v = d.U8()
	return v, d.Err() == nil
}
