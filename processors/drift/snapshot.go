package drift

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrSnapshot is wrapped by every UnmarshalBinary error.
var ErrSnapshot = errors.New("drift: bad snapshot")

// snapshotMagic starts every snapshot; its last byte is the format version.
var snapshotMagic = []byte("fbdrift\x01")

// MarshalBinary snapshots every key: the magic, the key count, then per key
// in Key.String order its four dimensions (uvarint length + bytes), its
// k-consecutive counter (uvarint) and its window.Store
// (Store.AppendBinary). Equal states give equal bytes. It never fails.
func (p *Processor) MarshalBinary() ([]byte, error) {
	b := append([]byte(nil), snapshotMagic...)
	b = binary.AppendUvarint(b, uint64(len(p.keys)))
	for _, ko := range p.sortedKeys() {
		ks := p.keys[ko.key]
		b = appendKey(b, ko.key)
		b = binary.AppendUvarint(b, uint64(ks.consecutive))
		b = ks.store.AppendBinary(b)
	}
	return b, nil
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary.
// The snapshot must come from a processor with the same Every and
// MaxSamplesPerSlot; otherwise, or when the bytes are damaged, it returns
// an error wrapping ErrSnapshot and leaves the state unchanged.
func (p *Processor) UnmarshalBinary(b []byte) error {
	if len(b) < len(snapshotMagic) || string(b[:len(snapshotMagic)]) != string(snapshotMagic) {
		return fmt.Errorf("%w: not a drift snapshot (format v%d)", ErrSnapshot, snapshotMagic[len(snapshotMagic)-1])
	}
	b = b[len(snapshotMagic):]
	nk, k := binary.Uvarint(b)
	if k <= 0 || nk > uint64(len(b)) {
		return fmt.Errorf("%w: key count", ErrSnapshot)
	}
	b = b[k:]
	keys := make(map[schemas.Key]*keyState, nk)
	for i := uint64(0); i < nk; i++ {
		var key schemas.Key
		var err error
		if key, b, err = readKey(b); err != nil {
			return fmt.Errorf("%w: key %d: %v", ErrSnapshot, i, err)
		}
		ks := &keyState{}
		c, k := binary.Uvarint(b)
		if k <= 0 || c > 1<<31 {
			return fmt.Errorf("%w: counter of key %q", ErrSnapshot, key.String())
		}
		ks.consecutive = int(c)
		if b, err = ks.store.DecodeBinary(b[k:]); err != nil {
			return fmt.Errorf("%w: window of key %q: %v", ErrSnapshot, key.String(), err)
		}
		if ks.store.SlotWidth != p.every || ks.store.Cap != p.cfg.MaxSamplesPerSlot {
			return fmt.Errorf("%w: key %q: slot width %d ns and cap %d, want every=%d ns and max_samples_per_slot=%d",
				ErrSnapshot, key.String(), ks.store.SlotWidth, ks.store.Cap, p.every, p.cfg.MaxSamplesPerSlot)
		}
		if _, dup := keys[key]; dup {
			return fmt.Errorf("%w: key %q twice", ErrSnapshot, key.String())
		}
		keys[key] = ks
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrSnapshot, len(b))
	}
	p.keys = keys
	return nil
}

func appendKey(b []byte, k schemas.Key) []byte {
	for _, s := range [4]string{k.Tenant, k.Service, k.Model, k.Variant} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func readKey(b []byte) (schemas.Key, []byte, error) {
	var dims [4]string
	for i := range dims {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return schemas.Key{}, nil, errors.New("truncated dimension")
		}
		dims[i] = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	return schemas.Key{Tenant: dims[0], Service: dims[1], Model: dims[2], Variant: dims[3]}, b, nil
}
