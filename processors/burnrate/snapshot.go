package burnrate

import (
	"errors"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrCorrupt is wrapped by every UnmarshalBinary error.
var ErrCorrupt = errors.New("burnrate: corrupt snapshot")

// snapshotFormat is the snapshot's header.
var snapshotFormat = snapcodec.Format{Name: "fusebox.burnrate", Version: 1, Err: ErrCorrupt}

// Encoded sizes in bytes, for the decoder's count checks.
const (
	bucketSize   = 16        // start, good, bad
	keyStateSize = 8 + 4 + 4 // last, two empty rings
)

// MarshalBinary snapshots every key's rings, keys in Key.String order, in
// the snapcodec layout: the newest event time, the fine ring, the coarse
// ring, then (method cusum only) the CUSUM statistic and the end of the
// last interval folded into it, then (failed_answers in bad_events only)
// the errors and failed answers of every fine and coarse slot. Equal
// states give equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	return snapshotFormat.MarshalSized(&p.snapSize, func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			e.I64(ks.last)
			putRing(e, &ks.fine, p.every)
			putRing(e, &ks.coarse, coarseWidth)
			if p.cusum != nil {
				// Method cusum only: the default layout is unchanged.
				e.F64(ks.cusum)
				e.I64(ks.cusumAt)
			}
			if p.answers {
				// bad_events with failed_answers only: the default
				// layout is unchanged.
				putSplits(e, ks.fineSplit)
				putSplits(e, ks.coarseSplit)
			}
		})
	}), nil
}

func putRing(e *snapcodec.Encoder, r *ring, width int64) {
	e.Count(int(r.len()))
	for i := range r.len() {
		start, good, bad := r.at(i, width)
		e.I64(start)
		e.U32(good)
		e.U32(bad)
	}
}

func putSplits(e *snapcodec.Encoder, ring []split) {
	e.Count(len(ring))
	for _, x := range ring {
		e.U32(x.Errors)
		e.U32(x.Failed)
	}
}

func getSplits(d *snapcodec.Decoder) []split {
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

// getRing reads a ring of buckets of width, in the narrow form when every
// bucket fits it (ringOf).
func getRing(d *snapcodec.Decoder, width int64) ring {
	n := d.Count(bucketSize)
	if n == 0 {
		return ring{}
	}
	out := make([]bucket, n)
	for i := range out {
		out[i] = bucket{Start: d.I64(), Good: d.U32(), Bad: d.U32()}
	}
	return ringOf(out, width)
}

// UnmarshalBinary replaces the state with a snapshot taken with the same
// configuration (the same ring sizes). On error, which wraps ErrCorrupt,
// the processor is left empty.
func (p *Processor) UnmarshalBinary(b []byte) error {
	var keys map[schemas.Key]*keyState
	err := snapshotFormat.Unmarshal(b, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, keyStateSize, func(d *snapcodec.Decoder, _ schemas.Key) *keyState {
			st := &keyState{last: d.I64(), fine: getRing(d, p.every), coarse: getRing(d, coarseWidth)}
			if p.cusum != nil {
				st.cusum, st.cusumAt = d.F64(), d.I64()
				if d.Err() == nil && !(st.cusum >= 0 && st.cusum <= 2*p.cfg.CUSUMThreshold) {
					d.Failf("CUSUM statistic %v outside [0, 2 × cusum_threshold]", st.cusum)
				}
			}
			if p.answers {
				st.fineSplit, st.coarseSplit = getSplits(d), getSplits(d)
				if d.Err() == nil && (len(st.fineSplit) != int(st.fine.len()) || len(st.coarseSplit) != int(st.coarse.len())) {
					d.Failf("split rings of %d and %d slots for rings of %d and %d buckets",
						len(st.fineSplit), len(st.coarseSplit), int(st.fine.len()), int(st.coarse.len()))
				}
			}
			if d.Err() == nil && (int(st.fine.len()) != p.nFine || int(st.coarse.len()) != p.nCoarse) {
				d.Failf("rings of %d and %d buckets, this configuration has %d and %d (a snapshot from another configuration)",
					int(st.fine.len()), int(st.coarse.len()), p.nFine, p.nCoarse)
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
