package scaling

import (
	"slices"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// snapshotFormat is the snapshot's header; version 1 was the layout before
// the shared codec.
var snapshotFormat = snapcodec.Format{Name: "fusebox.scaling", Version: 2, Err: ErrCorrupt}

// Encoded sizes in bytes, for the decoder's count checks: a mix slot
// without categories (start, n, count), one category (hash, count), and a
// key's state without slots (low streak, slot count, empty window).
const (
	mixSlotSize  = 20
	categorySize = 16
	keyStateSize = 8 + window.MinEncodedSize
)

// MarshalBinary snapshots every scope key in the snapcodec layout: in key
// order, the key, its low streak, its mix slots (categories in hash order)
// and its latency window. Equal states give equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	var cats []catCount
	return snapshotFormat.Marshal(func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			e.U32(uint32(ks.lowStreak))
			e.Count(len(ks.slots))
			for i := range ks.slots {
				sl := &ks.slots[i]
				e.I64(sl.start)
				e.I64(sl.n)
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
			ks.lat.Encode(e)
		})
	}), nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary
// taken with the same Every, MaxSamplesPerSlot and (at most)
// MaxCategories. On error, which wraps ErrCorrupt, the processor is left
// empty.
func (p *Processor) UnmarshalBinary(data []byte) error {
	var keys map[schemas.Key]*keyState
	err := snapshotFormat.Unmarshal(data, func(d *snapcodec.Decoder) {
		keys = snapcodec.GetKeyed(d, keyStateSize, p.decodeKey)
	})
	if err != nil {
		keys = map[schemas.Key]*keyState{}
	}
	p.keys = keys
	return err
}

func (p *Processor) decodeKey(d *snapcodec.Decoder, _ schemas.Key) *keyState {
	ks := &keyState{lowStreak: int(d.U32()), lat: &window.Store{}}
	ns := d.Count(mixSlotSize)
	for range ns {
		sl := newMixSlot(d.I64())
		sl.n = d.I64()
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
	ks.lat.Decode(d, p.every, p.cfg.MaxSamplesPerSlot)
	return ks
}
