package decay

import (
	"encoding/binary"

	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

// snapshotVersion is the first byte of every snapshot.
const snapshotVersion = 1

// MarshalBinary snapshots every key's score window, in key order; equal
// states give equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	b := []byte{snapshotVersion}
	keys := sortedKeys(p.keys)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		ks := k.String()
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ks)))
		b = append(b, ks...)
		b = p.keys[k].AppendBinary(b)
	}
	return b, nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary.
// On error the processor is left empty.
func (p *Processor) UnmarshalBinary(data []byte) error {
	p.keys = map[schemas.Key]*window.Store{}
	if len(data) < 5 || data[0] != snapshotVersion {
		return ErrCorrupt
	}
	n := int(binary.LittleEndian.Uint32(data[1:]))
	b := data[5:]
	if n > len(b)/4 {
		return ErrCorrupt
	}
	keys := make(map[schemas.Key]*window.Store, n)
	for range n {
		if len(b) < 4 {
			return ErrCorrupt
		}
		l := int(binary.LittleEndian.Uint32(b))
		if l > len(b)-4 {
			return ErrCorrupt
		}
		k, err := schemas.ParseKey(string(b[4 : 4+l]))
		if err != nil {
			return ErrCorrupt
		}
		st := &window.Store{}
		if b, err = st.DecodeBinary(b[4+l:]); err != nil || st.SlotWidth != p.every || st.Cap != p.cfg.MaxSamplesPerSlot {
			return ErrCorrupt
		}
		keys[k] = st
	}
	if len(b) != 0 {
		return ErrCorrupt
	}
	p.keys = keys
	return nil
}
