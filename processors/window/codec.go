package window

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrCorrupt is returned when a snapshot cannot be decoded.
var ErrCorrupt = errors.New("window: corrupt snapshot")

// AppendBinary appends the store's snapshot to dst: width, cap, then each
// slot's start, count and samples, all little-endian.
func (s *Store) AppendBinary(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(s.SlotWidth))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(s.Cap))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s.Slots)))
	for i := range s.Slots {
		sl := &s.Slots[i]
		dst = binary.LittleEndian.AppendUint64(dst, uint64(sl.Start))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(sl.N))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(sl.Samples)))
		for _, x := range sl.Samples {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(x.T))
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x.V))
			dst = binary.LittleEndian.AppendUint64(dst, x.H)
		}
	}
	return dst
}

// DecodeBinary reads a snapshot written by AppendBinary from the front of b
// into s and returns the rest of b.
func (s *Store) DecodeBinary(b []byte) ([]byte, error) {
	r := reader{b: b}
	s.SlotWidth = int64(r.u64())
	s.Cap = int(r.u32())
	ns := int(r.u32())
	if r.err || s.SlotWidth <= 0 || s.Cap <= 0 || ns > len(r.b)/20 {
		return nil, ErrCorrupt
	}
	s.Slots = make([]Slot, ns)
	for i := range s.Slots {
		sl := &s.Slots[i]
		sl.Start = int64(r.u64())
		sl.N = int64(r.u64())
		m := int(r.u32())
		if r.err || m > s.Cap || m > len(r.b)/24 {
			return nil, ErrCorrupt
		}
		sl.Samples = make([]Sample, m, min(s.Cap, max(m, 16)))
		for j := range sl.Samples {
			sl.Samples[j] = Sample{T: int64(r.u64()), V: math.Float64frombits(r.u64()), H: r.u64()}
		}
	}
	if r.err {
		return nil, ErrCorrupt
	}
	return r.b, nil
}

type reader struct {
	b   []byte
	err bool
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

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.err = true
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}
