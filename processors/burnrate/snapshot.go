package burnrate

import (
	"errors"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrCorrupt is wrapped by every UnmarshalBinary error.
var ErrCorrupt = errors.New("burnrate: corrupt snapshot")

// snapshotFormat is the snapshot's header. Version 2 writes each ring as
// its length and its non-empty buckets (rings start short and grow, see
// minRing); version 1 (dense rings of the full length) is read too.
var (
	snapshotFormat   = snapcodec.Format{Name: "fusebox.burnrate", Version: 2, Err: ErrCorrupt}
	snapshotFormatV1 = snapcodec.Format{Name: "fusebox.burnrate", Version: 1, Err: ErrCorrupt}
)

// Encoded sizes in bytes, for the decoder's count checks.
const (
	bucketSize     = 16             // start, good, bad
	splitSize      = 8              // errors, failed
	keyStateSize   = 8 + 4 + 4      // version 1: last, two empty rings
	keyStateSizeV2 = 8 + 2*(4+4)    // last, two empty rings (length, buckets)
	bucketSizeV2   = 4 + bucketSize // slot, start, good, bad
)

// MarshalBinary snapshots every key's rings, keys in Key.String order, in
// the snapcodec layout: the newest event time, the fine ring, the coarse
// ring (each its length, the count of its non-empty buckets, then each of
// those: its slot, start, good and bad calls, and with failed_answers in
// bad_events its errors and failed answers), then (method cusum only) the
// CUSUM statistic and the end of the last interval folded into it. Equal
// states give equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	return snapshotFormat.Marshal(func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			e.I64(ks.last)
			p.putRing(e, ks.fine, ks.fineSplit)
			p.putRing(e, ks.coarse, ks.coarseSplit)
			if p.cusum != nil {
				e.F64(ks.cusum)
				e.I64(ks.cusumAt)
			}
		})
	}), nil
}

func (p *Processor) putRing(e *snapcodec.Encoder, ring []bucket, splits []split) {
	e.Count(len(ring))
	n := 0
	for _, x := range ring {
		if x.Good+x.Bad > 0 {
			n++
		}
	}
	e.Count(n)
	for i, x := range ring {
		if x.Good+x.Bad == 0 {
			continue
		}
		e.U32(uint32(i))
		e.I64(x.Start)
		e.U32(x.Good)
		e.U32(x.Bad)
		if p.answers {
			e.U32(splits[i].Errors)
			e.U32(splits[i].Failed)
		}
	}
}

// getRing reads a version 2 ring of at most full buckets of width: each
// bucket in the slot its start maps to, each slot once.
func (p *Processor) getRing(d *snapcodec.Decoder, full int, width int64) ([]bucket, []split) {
	n := d.Count(0)
	if d.Err() == nil && (n > full || (n == 0) != (full == 0)) {
		d.Failf("a ring of %d buckets, this configuration's is at most %d", n, full)
	}
	size := bucketSizeV2
	if p.answers {
		size += splitSize
	}
	m := d.Count(size)
	if d.Err() != nil || n == 0 {
		return nil, nil
	}
	if m > n {
		d.Failf("%d buckets in a ring of %d", m, n)
		return nil, nil
	}
	ring := make([]bucket, n)
	var splits []split
	if p.answers {
		splits = make([]split, n)
	}
	for range m {
		i, b := int64(d.U32()), bucket{Start: d.I64(), Good: d.U32(), Bad: d.U32()}
		var sp split
		if p.answers {
			sp = split{Errors: d.U32(), Failed: d.U32()}
		}
		if d.Err() != nil {
			return nil, nil
		}
		if b.Good+b.Bad == 0 || b.Start%width != 0 || i != processors.FloorMod(b.Start/width, int64(n)) || ring[i].Good+ring[i].Bad > 0 {
			d.Failf("bucket %d at %d (good %d, bad %d) is not where a ring of %d puts it", i, b.Start, b.Good, b.Bad, n)
			return nil, nil
		}
		ring[i] = b
		if p.answers {
			splits[i] = sp
		}
	}
	return ring, splits
}

func getSplitsV1(d *snapcodec.Decoder) []split {
	n := d.Count(8)
	if n == 0 {
		return nil
	}
	out := make([]split, n)
	for i := range out {
		out[i] = split{Errors: d.U32(), Failed: d.U32()}
	}
	return out
}

func getRingV1(d *snapcodec.Decoder) []bucket {
	n := d.Count(bucketSize)
	if n == 0 {
		return nil
	}
	out := make([]bucket, n)
	for i := range out {
		out[i] = bucket{Start: d.I64(), Good: d.U32(), Bad: d.U32()}
	}
	return out
}

// UnmarshalBinary replaces the state with a snapshot taken with the same
// configuration (rings no longer than this configuration's; a version 1
// snapshot's rings of exactly its lengths). On error, which wraps
// ErrCorrupt, the processor is left empty.
func (p *Processor) UnmarshalBinary(b []byte) error {
	if isFormat(b, snapshotFormatV1) {
		return p.unmarshalV1(b)
	}
	var keys map[schemas.Key]*keyState
	err := snapshotFormat.Unmarshal(b, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, keyStateSizeV2, func(d *snapcodec.Decoder, _ schemas.Key) *keyState {
			st := &keyState{last: d.I64()}
			st.fine, st.fineSplit = p.getRing(d, p.nFine, p.every)
			st.coarse, st.coarseSplit = p.getRing(d, p.nCoarse, coarseWidth)
			if p.cusum != nil {
				st.cusum, st.cusumAt = d.F64(), d.I64()
				if d.Err() == nil && !(st.cusum >= 0 && st.cusum <= 2*p.cfg.CUSUMThreshold) {
					d.Failf("CUSUM statistic %v outside [0, 2 × cusum_threshold]", st.cusum)
				}
			}
			return st
		})
	})
	if err != nil {
		keys = map[schemas.Key]*keyState{}
	}
	p.keys = keys
	return err
}

// unmarshalV1 reads a version 1 snapshot: dense rings of this
// configuration's full lengths, then the split rings.
func (p *Processor) unmarshalV1(b []byte) error {
	var keys map[schemas.Key]*keyState
	err := snapshotFormatV1.Unmarshal(b, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, keyStateSize, func(d *snapcodec.Decoder, _ schemas.Key) *keyState {
			st := &keyState{last: d.I64(), fine: getRingV1(d), coarse: getRingV1(d)}
			if p.cusum != nil {
				st.cusum, st.cusumAt = d.F64(), d.I64()
				if d.Err() == nil && !(st.cusum >= 0 && st.cusum <= 2*p.cfg.CUSUMThreshold) {
					d.Failf("CUSUM statistic %v outside [0, 2 × cusum_threshold]", st.cusum)
				}
			}
			if p.answers {
				st.fineSplit, st.coarseSplit = getSplitsV1(d), getSplitsV1(d)
				if d.Err() == nil && (len(st.fineSplit) != len(st.fine) || len(st.coarseSplit) != len(st.coarse)) {
					d.Failf("split rings of %d and %d slots for rings of %d and %d buckets",
						len(st.fineSplit), len(st.coarseSplit), len(st.fine), len(st.coarse))
				}
			}
			if d.Err() == nil && (len(st.fine) != p.nFine || len(st.coarse) != p.nCoarse) {
				d.Failf("rings of %d and %d buckets, this configuration has %d and %d (a snapshot from another configuration)",
					len(st.fine), len(st.coarse), p.nFine, p.nCoarse)
			}
			return st
		})
	})
	if err != nil {
		keys = map[schemas.Key]*keyState{}
	}
	p.keys = keys
	return err
}

// isFormat reports whether b starts with f's header.
func isFormat(b []byte, f snapcodec.Format) bool {
	d := snapcodec.NewDecoder(b)
	d.Header(f.Name, f.Version)
	return d.Err() == nil
}
