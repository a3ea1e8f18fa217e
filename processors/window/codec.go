package window

import (
	"errors"
	"fmt"

	"github.com/fusebox-dev/fusebox/processors/snapcodec"
)

// ErrCorrupt is wrapped by every DecodeBinary error.
var ErrCorrupt = errors.New("window: corrupt snapshot")

// sampleSize and slotSize are the encoded sizes of a Sample and of a Slot
// without samples, in bytes: the minimum sizes the decoder checks counts
// against.
const (
	sampleSize = 24
	slotSize   = 20
)

// MinEncodedSize is the fewest bytes Encode writes (an empty store), for
// snapcodec.Decoder.Count and snapcodec.GetKeyed.
const MinEncodedSize = 16

// Encode writes the store: its slot width (I64) and cap (Count), the slot
// count, then each slot's start, N and samples (T, V, H).
func (s *Store) Encode(e *snapcodec.Encoder) {
	e.I64(s.SlotWidth)
	e.Count(s.Cap)
	e.Count(len(s.Slots))
	for i := range s.Slots {
		sl := &s.Slots[i]
		e.I64(sl.Start)
		e.I64(sl.N)
		e.Count(len(sl.Samples))
		for _, x := range sl.Samples {
			e.I64(x.T)
			e.F64(x.V)
			e.U64(x.H)
		}
	}
}

// Decode reads a store written by Encode into s, recording any problem in
// d. A positive width or capPerSlot must match the store's (a snapshot
// taken with another every or max_samples_per_slot is rejected, naming
// them); 0 accepts any positive value.
func (s *Store) Decode(d *snapcodec.Decoder, width int64, capPerSlot int) {
	s.SlotWidth = d.I64()
	s.Cap = int(d.U32())
	if d.Err() != nil {
		return
	}
	switch {
	case s.SlotWidth <= 0 || s.Cap <= 0:
		d.Failf("window slot width %d ns and cap %d: both must be positive", s.SlotWidth, s.Cap)
		return
	case width > 0 && s.SlotWidth != width:
		d.Failf("window slot width %d ns, want %d ns (every, or drift's step)", s.SlotWidth, width)
		return
	case capPerSlot > 0 && s.Cap != capPerSlot:
		d.Failf("window cap %d samples per slot, want max_samples_per_slot=%d", s.Cap, capPerSlot)
		return
	}
	n := d.Count(slotSize)
	s.Slots = make([]Slot, n, n+2) // room for the slots that open next (roomForSlot)
	for i := range s.Slots {
		sl := &s.Slots[i]
		sl.Start = d.I64()
		sl.N = d.I64()
		m := d.Count(sampleSize)
		if m > s.Cap {
			d.Failf("slot of %d samples, cap %d", m, s.Cap)
		}
		if d.Err() != nil {
			return
		}
		// Sealed slots exact (see seal); the newest with room to grow.
		room := m
		if i == len(s.Slots)-1 {
			room = min(s.Cap, max(m, 16))
		}
		sl.Samples = make([]Sample, m, room)
		for j := range sl.Samples {
			sl.Samples[j] = Sample{T: d.I64(), V: d.F64(), H: d.U64()}
		}
	}
}

// AppendBinary appends the store's snapshot (Encode) to dst.
func (s *Store) AppendBinary(dst []byte) []byte {
	e := snapcodec.NewEncoder(dst)
	s.Encode(e)
	return e.Bytes()
}

// DecodeBinary reads a snapshot written by AppendBinary from the front of b
// into s and returns the rest of b. Errors wrap ErrCorrupt.
func (s *Store) DecodeBinary(b []byte) ([]byte, error) {
	d := snapcodec.NewDecoder(b)
	s.Decode(d, 0, 0)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return d.Rest(), nil
}
