package burnrate

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrCorrupt is returned by UnmarshalBinary on a bad snapshot.
var ErrCorrupt = errors.New("burnrate: corrupt snapshot")

// MarshalBinary snapshots every key's rings, keys in sorted order.
func (p *Processor) MarshalBinary() ([]byte, error) {
	keys := make([]schemas.Key, 0, len(p.keys))
	for k := range p.keys {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b schemas.Key) int { return cmpString(a.String(), b.String()) })
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(keys)))
	for _, k := range keys {
		ks := p.keys[k]
		s := k.String()
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
		b = binary.LittleEndian.AppendUint64(b, uint64(ks.last))
		b = appendRing(b, ks.fine)
		b = appendRing(b, ks.coarse)
	}
	return b, nil
}

func appendRing(b []byte, ring []bucket) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ring)))
	for _, x := range ring {
		b = binary.LittleEndian.AppendUint64(b, uint64(x.Start))
		b = binary.LittleEndian.AppendUint32(b, x.Good)
		b = binary.LittleEndian.AppendUint32(b, x.Bad)
	}
	return b
}

// UnmarshalBinary restores a snapshot taken with the same configuration.
func (p *Processor) UnmarshalBinary(b []byte) error {
	p.keys = map[schemas.Key]*keyState{}
	r := reader{b: b}
	n := int(r.u32())
	for i := 0; i < n && !r.bad; i++ {
		ks := string(r.bytes(int(r.u32())))
		k, err := schemas.ParseKey(ks)
		if err != nil {
			return ErrCorrupt
		}
		st := &keyState{last: int64(r.u64())}
		st.fine = r.ring()
		st.coarse = r.ring()
		if len(st.fine) != p.nFine || len(st.coarse) != p.nCoarse {
			return errors.Join(ErrCorrupt, errors.New("burnrate: snapshot from another configuration"))
		}
		if len(st.coarse) == 0 {
			st.coarse = nil
		}
		p.keys[k] = st
	}
	if r.bad || len(r.b) != 0 {
		return ErrCorrupt
	}
	return nil
}

type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u32() uint32 {
	v := r.bytes(4)
	if v == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(v)
}

func (r *reader) u64() uint64 {
	v := r.bytes(8)
	if v == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}

func (r *reader) ring() []bucket {
	n := int(r.u32())
	if r.bad || n > len(r.b)/16 {
		r.bad = true
		return nil
	}
	out := make([]bucket, n)
	for i := range out {
		out[i] = bucket{Start: int64(r.u64()), Good: r.u32(), Bad: r.u32()}
	}
	return out
}
