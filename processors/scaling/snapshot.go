package scaling

import (
	"slices"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/nosamples"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// snapshotFormat is the snapshot's header. Version 3 keeps each mix
// slot's latency moments (moments: n, Σx, Σx² in ns) in place of the key's
// latency sample; version 2 (the mix slots, then the key's window.Store of
// at most max_samples_per_slot latencies per slot) is still read, its
// samples turned into moments; version 1 was the layout before the shared
// codec.
var (
	snapshotFormat   = snapcodec.Format{Name: "fusebox.scaling", Version: 3, Err: ErrCorrupt}
	snapshotFormatV2 = snapcodec.Format{Name: "fusebox.scaling", Version: 2, Err: ErrCorrupt}
)

// Encoded sizes in bytes, for the decoder's count checks: a mix slot
// without categories (start, n, moments, count), one category (hash,
// count), and a key's state without slots (low streak, slot count; in
// version 2 also an empty window).
const (
	mixSlotSize    = 20 + momentsSize
	mixSlotSizeV2  = 20
	categorySize   = 16
	keyStateSize   = 8
	keyStateSizeV2 = 8 + window.MinEncodedSize
)

// MarshalBinary snapshots every scope key in the snapcodec layout: in key
// order, the key, its low streak and its mix slots (start, n, latency
// moments, categories in hash order). Equal states give equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	var cats []catCount
	return snapshotFormat.MarshalSized(&p.snapSize, func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			e.U32(uint32(ks.lowStreak))
			e.Count(len(ks.slots))
			for i := range ks.slots {
				sl := &ks.slots[i]
				e.I64(sl.start)
				e.I64(sl.n)
				e.I64(sl.lat.n)
				for _, w := range sl.lat.s {
					e.U64(w)
				}
				for _, w := range sl.lat.q {
					e.U64(w)
				}
				cats = cats[:0]
				for h, c := range sl.counts {
					cats = append(cats, catCount{h, c})
				}
				slices.SortFunc(cats, compareCategories)
				e.Count(len(cats))
				for _, c := range cats {
					e.U64(c.h)
					e.I64(c.n)
				}
			}
		})
	}), nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary
// taken with the same Every and (at most) MaxCategories: format 3, or 2 of
// the builds that kept a latency sample, whose samples become the slots'
// moments (so a window restored from version 2 has its variance over the
// sample: latency_samples below n where a slot had been full). On error,
// which wraps ErrCorrupt, the processor is left empty.
func (p *Processor) UnmarshalBinary(data []byte) error {
	var keys map[schemas.Key]*keyState
	format, v2 := snapshotFormat, nosamples.IsFormat(data, snapshotFormatV2)
	size := keyStateSize
	if v2 {
		format, size = snapshotFormatV2, keyStateSizeV2
	}
	err := format.Unmarshal(data, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, size, func(d *snapcodec.Decoder, _ schemas.Key) *keyState {
			return p.decodeKey(d, v2)
		})
	})
	if err != nil {
		keys = map[schemas.Key]*keyState{}
	}
	p.keys = keys
	return err
}

func (p *Processor) decodeKey(d *snapcodec.Decoder, v2 bool) *keyState {
	ks := &keyState{lowStreak: int(d.U32())}
	size := mixSlotSize
	if v2 {
		size = mixSlotSizeV2
	}
	ns := d.Count(size)
	for range ns {
		sl := newMixSlot(d.I64())
		sl.n = d.I64()
		if !v2 {
			decodeMoments(d, &sl.lat, sl.n)
		}
		nc := d.Count(categorySize)
		if nc > p.cfg.MaxCategories+1 {
			d.Failf("mix slot of %d categories, max_categories %d", nc, p.cfg.MaxCategories)
		}
		if d.Err() != nil {
			return ks
		}
		for range nc {
			h := d.U64()
			sl.counts[h] = d.I64()
		}
		sl.restored(p.cfg.MaxCategories)
		ks.slots = append(ks.slots, sl)
	}
	if v2 {
		var st window.Store
		st.Decode(d, p.every, 0) // any max_samples_per_slot: the sample is folded
		momentsFromSamples(d, ks, &st)
	}
	return ks
}

// decodeMoments reads moments written by MarshalBinary into m, checking
// what a valid state keeps: 0 ≤ m.n ≤ the slot's n, zero sums for no
// duration, and the sums within their bounds (Σx < 2^110, Σx² < 2^157).
func decodeMoments(d *snapcodec.Decoder, m *moments, slotN int64) {
	m.n = d.I64()
	for i := range m.s {
		m.s[i] = d.U64()
	}
	for i := range m.q {
		m.q[i] = d.U64()
	}
	switch {
	case d.Err() != nil:
	case m.n < 0 || m.n > slotN:
		d.Failf("latency moments of %d spans in a slot of %d", m.n, slotN)
	case m.n == 0 && *m != (moments{}):
		d.Failf("latency moments of no span with non-zero sums")
	case m.s[1] >= 1<<46 || m.q[2] >= 1<<29:
		d.Failf("latency moments beyond their bounds (Σx ≥ 2^110 or Σx² ≥ 2^157 ns)")
	}
}

// momentsFromSamples adds a version-2 snapshot's latency samples to the
// moments of the mix slot each falls in. Both kinds of slot were opened by
// the same span and evicted at the same time, so a latency slot with
// samples but no mix slot, or with more samples than its mix slot has
// spans, is a damaged snapshot.
func momentsFromSamples(d *snapcodec.Decoder, ks *keyState, st *window.Store) {
	if d.Err() != nil {
		return
	}
	for i := range st.Slots {
		ws := &st.Slots[i]
		j := slices.IndexFunc(ks.slots, func(m mixSlot) bool { return m.start == ws.Start })
		ok := j >= 0
		if !ok {
			if len(ws.Samples) > 0 {
				d.Failf("version 2 latency slot at %d ns without a mix slot", ws.Start)
			}
			continue
		}
		sl := &ks.slots[j]
		if int64(len(ws.Samples)) > sl.n {
			d.Failf("version 2 latency slot of %d samples in a mix slot of %d spans", len(ws.Samples), sl.n)
			return
		}
		for _, x := range ws.Samples {
			if ns, ok := durationNs(x.V); ok {
				sl.lat.add(ns)
			}
		}
	}
}
