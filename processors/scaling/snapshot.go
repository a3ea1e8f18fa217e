package scaling

import (
	"encoding/binary"
	"slices"

	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// snapshotVersion is the first byte of every snapshot.
const snapshotVersion = 1

// MarshalBinary snapshots every scope key: in key order, the key, its low
// streak, its mix slots (categories in hash order) and its latency window.
// Equal states give equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	b := []byte{snapshotVersion}
	keys := sortedKeys(p.keys)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
	var cats []catCount
	for _, k := range keys {
		ks := p.keys[k]
		b = appendString(b, k.String())
		b = binary.LittleEndian.AppendUint32(b, uint32(ks.lowStreak))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ks.slots)))
		for i := range ks.slots {
			sl := &ks.slots[i]
			b = binary.LittleEndian.AppendUint64(b, uint64(sl.start))
			b = binary.LittleEndian.AppendUint64(b, uint64(sl.n))
			cats = cats[:0]
			for h, c := range sl.counts {
				cats = append(cats, catCount{h, c})
			}
			slices.SortFunc(cats, func(a, b catCount) int {
				if a.h < b.h {
					return -1
				}
				return 1
			})
			b = binary.LittleEndian.AppendUint32(b, uint32(len(cats)))
			for _, c := range cats {
				b = binary.LittleEndian.AppendUint64(b, c.h)
				b = binary.LittleEndian.AppendUint64(b, uint64(c.n))
			}
		}
		b = ks.lat.AppendBinary(b)
	}
	return b, nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary.
// On error the processor is left empty.
func (p *Processor) UnmarshalBinary(data []byte) error {
	p.keys = map[schemas.Key]*keyState{}
	keys, err := p.decode(data)
	if err != nil {
		return err
	}
	p.keys = keys
	return nil
}

func (p *Processor) decode(data []byte) (map[schemas.Key]*keyState, error) {
	r := reader{b: data}
	if r.u8() != snapshotVersion {
		return nil, ErrCorrupt
	}
	nk := int(r.u32())
	if r.err || nk > len(r.b)/8 {
		return nil, ErrCorrupt
	}
	keys := make(map[schemas.Key]*keyState, nk)
	for range nk {
		k, err := schemas.ParseKey(r.str())
		if err != nil || r.err {
			return nil, ErrCorrupt
		}
		ks := &keyState{lowStreak: int(r.u32())}
		ns := int(r.u32())
		if r.err || ns > len(r.b)/20 {
			return nil, ErrCorrupt
		}
		for range ns {
			sl := newMixSlot(int64(r.u64()))
			sl.n = int64(r.u64())
			nc := int(r.u32())
			if r.err || nc > len(r.b)/16 || nc > p.cfg.MaxCategories+1 {
				return nil, ErrCorrupt
			}
			for range nc {
				h := r.u64()
				sl.counts[h] = int64(r.u64())
			}
			sl.restored(p.cfg.MaxCategories)
			ks.slots = append(ks.slots, sl)
		}
		if r.err {
			return nil, ErrCorrupt
		}
		ks.lat = &window.Store{}
		rest, err := ks.lat.DecodeBinary(r.b)
		if err != nil || ks.lat.SlotWidth != p.every || ks.lat.Cap != p.cfg.MaxSamplesPerSlot {
			return nil, ErrCorrupt
		}
		r.b = rest
		keys[k] = ks
	}
	if r.err || len(r.b) != 0 {
		return nil, ErrCorrupt
	}
	return keys, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

type reader struct {
	b   []byte
	err bool
}

func (r *reader) u8() byte {
	if len(r.b) < 1 {
		r.err = true
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.err = true
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.err = true
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) str() string {
	n := int(r.u32())
	if r.err || n > len(r.b) {
		r.err = true
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
