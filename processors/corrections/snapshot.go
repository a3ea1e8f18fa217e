package corrections

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
)

// snapshotVersion is the first byte of every snapshot.
const snapshotVersion = 1

// MarshalBinary snapshots the whole state: span keys (sorted) with their
// slots, unjoined keys (sorted) with theirs, the span index (entries sorted
// by end time, hash, then identity; each naming its key by position in the
// key list) and the pending corrections (sorted as they will be joined).
// Equal states give equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	w := writer{b: []byte{snapshotVersion}}
	keys := sortedKeys(p.keys)
	pos := make(map[*keyState]uint32, len(keys))
	w.u32(uint32(len(keys)))
	for i, k := range keys {
		ks := p.keys[k]
		pos[ks] = uint32(i)
		w.str(k.String())
		w.u32(uint32(len(ks.slots)))
		for _, s := range ks.slots {
			w.i64(s.start)
			w.i64(s.responses)
			w.i64(s.corrections)
			w.i64(s.repeats)
			for _, n := range s.kinds {
				w.i64(n)
			}
		}
	}
	ukeys := sortedKeys(p.unjoined)
	w.u32(uint32(len(ukeys)))
	for _, k := range ukeys {
		u := p.unjoined[k]
		w.str(k.String())
		w.u32(uint32(len(u.slots)))
		for _, s := range u.slots {
			w.i64(s.start)
			w.i64(s.n)
			w.i64(s.overflow)
		}
	}
	x := p.index
	w.i64(x.evicted)
	live := make([]int32, 0, len(x.heap))
	for _, it := range x.heap {
		live = append(live, it.idx)
	}
	slices.SortFunc(live, func(a, b int32) int {
		ea, eb := &x.entries[a], &x.entries[b]
		if c := compareEntries(ea, eb); c != 0 {
			return c
		}
		return cmp.Compare(pos[ea.ks], pos[eb.ks])
	})
	w.u32(uint32(len(live)))
	for _, j := range live {
		e := &x.entries[j]
		w.i64(e.end)
		w.u64(e.h)
		w.b = append(w.b, e.trace[:]...)
		w.str(e.session)
		w.str(e.tenant)
		w.u32(pos[e.ks])
		if e.corrected {
			w.b = append(w.b, 1)
		} else {
			w.b = append(w.b, 0)
		}
	}
	pend := slices.Clone(p.pending)
	slices.SortFunc(pend, comparePending)
	w.u32(uint32(len(pend)))
	for _, c := range pend {
		w.i64(c.tc)
		w.u64(c.h)
		w.str(c.eventID)
		w.str(c.tenant)
		w.b = append(w.b, c.trace[:]...)
		w.str(c.session)
		w.str(c.model)
		w.str(c.variant)
		w.str(string(c.kind))
	}
	return w.b, nil
}

func compareEntries(a, b *entry) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	if c := cmp.Compare(a.h, b.h); c != 0 {
		return c
	}
	if c := slices.Compare(a.trace[:], b.trace[:]); c != 0 {
		return c
	}
	if c := strings.Compare(a.session, b.session); c != 0 {
		return c
	}
	return strings.Compare(a.tenant, b.tenant)
}

func comparePending(a, b pending) int {
	if c := cmp.Compare(a.tc, b.tc); c != 0 {
		return c
	}
	if c := cmp.Compare(a.h, b.h); c != 0 {
		return c
	}
	return strings.Compare(a.eventID, b.eventID)
}

// UnmarshalBinary replaces the state with a snapshot from MarshalBinary.
// On error the processor is left empty.
func (p *Processor) UnmarshalBinary(data []byte) error {
	p.reset()
	if err := p.decode(data); err != nil {
		p.reset()
		return err
	}
	return nil
}

func (p *Processor) reset() {
	p.keys = map[schemas.Key]*keyState{}
	p.unjoined = map[schemas.Key]*unjoinedState{}
	p.index = newSpanIndex(p.cfg.MaxIndexedSpans)
	p.pending = nil
}

func (p *Processor) decode(data []byte) error {
	r := reader{b: data}
	if r.u8() != snapshotVersion {
		return ErrCorrupt
	}
	nk := int(r.u32())
	if r.err || nk > len(r.b)/8 {
		return ErrCorrupt
	}
	list := make([]*keyState, nk)
	for i := range list {
		k, err := schemas.ParseKey(r.str())
		if err != nil || r.err {
			return ErrCorrupt
		}
		ks := &keyState{key: k}
		ns := int(r.u32())
		if r.err || ns > len(r.b)/(8*(4+nKinds)) {
			return ErrCorrupt
		}
		ks.slots = make([]slot, ns)
		for j := range ks.slots {
			s := &ks.slots[j]
			s.start, s.responses, s.corrections, s.repeats = r.i64(), r.i64(), r.i64(), r.i64()
			for m := range s.kinds {
				s.kinds[m] = r.i64()
			}
		}
		list[i] = ks
		p.keys[k] = ks
	}
	nu := int(r.u32())
	if r.err || nu > len(r.b)/8 {
		return ErrCorrupt
	}
	for range nu {
		k, err := schemas.ParseKey(r.str())
		if err != nil || r.err {
			return ErrCorrupt
		}
		u := &unjoinedState{}
		ns := int(r.u32())
		if r.err || ns > len(r.b)/24 {
			return ErrCorrupt
		}
		u.slots = make([]uslot, ns)
		for j := range u.slots {
			u.slots[j] = uslot{start: r.i64(), n: r.i64(), overflow: r.i64()}
		}
		p.unjoined[k] = u
	}
	p.index.evicted = r.i64()
	ne := int(r.u32())
	if r.err || ne > len(r.b)/37 || ne > p.cfg.MaxIndexedSpans {
		return ErrCorrupt
	}
	evicted := p.index.evicted
	for range ne {
		e := entry{end: r.i64(), h: r.u64()}
		copy(e.trace[:], r.bytes(len(e.trace)))
		e.session = r.str()
		e.tenant = r.str()
		kp := int(r.u32())
		corrected := r.u8()
		if r.err || kp >= len(list) || corrected > 1 {
			return ErrCorrupt
		}
		e.ks = list[kp]
		e.corrected = corrected == 1
		p.index.add(e)
	}
	p.index.evicted = evicted
	np := int(r.u32())
	if r.err || np > len(r.b)/36 || np > p.cfg.MaxPendingCorrections {
		return ErrCorrupt
	}
	p.pending = make([]pending, np)
	for i := range p.pending {
		c := &p.pending[i]
		c.tc, c.h = r.i64(), r.u64()
		c.eventID, c.tenant = r.str(), r.str()
		copy(c.trace[:], r.bytes(len(c.trace)))
		c.session, c.model, c.variant = r.str(), r.str(), r.str()
		c.kind = schemas.CorrectionKind(r.str())
	}
	if r.err || len(r.b) != 0 {
		return ErrCorrupt
	}
	return nil
}

type writer struct{ b []byte }

func (w *writer) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *writer) i64(v int64)  { w.u64(uint64(v)) }
func (w *writer) str(s string) {
	w.u32(uint32(len(s)))
	w.b = append(w.b, s...)
}

type reader struct {
	b   []byte
	err bool
}

func (r *reader) bytes(n int) []byte {
	if len(r.b) < n {
		r.err = true
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() byte    { return r.bytes(1)[0] }
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.bytes(4)) }
func (r *reader) u64() uint64 { return binary.LittleEndian.Uint64(r.bytes(8)) }
func (r *reader) i64() int64  { return int64(r.u64()) }
func (r *reader) str() string {
	n := int(r.u32())
	if r.err || n > len(r.b) {
		r.err = true
		return ""
	}
	return string(r.bytes(n))
}
