package corrections

import (
	"cmp"
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// snapshotFormat is the snapshot's header; version 1 was the layout before
// the shared codec, version 2 the one before response ids (still read: its
// entries and corrections have none), version 3 the one whose index
// entries held the trace id, session id, response id and tenant (still
// read: their fingerprints are computed on restore) instead of version 4's
// three fingerprints. Version 5 adds the keys outside the SLO's match whose
// spans are indexed (ObserveUnmatched); a state without any is written as
// version 4, byte for byte what the release before version 5 wrote and
// reads.
var (
	snapshotFormat   = snapcodec.Format{Name: "fusebox.corrections", Version: 5, Err: ErrCorrupt}
	snapshotFormatV4 = snapcodec.Format{Name: "fusebox.corrections", Version: 4, Err: ErrCorrupt}
	snapshotFormatV3 = snapcodec.Format{Name: "fusebox.corrections", Version: 3, Err: ErrCorrupt}
	snapshotFormatV2 = snapcodec.Format{Name: "fusebox.corrections", Version: 2, Err: ErrCorrupt}
)

// Encoded sizes in bytes, for the decoder's count checks.
const (
	traceSize    = len(schemas.TraceID{})
	keySize      = snapcodec.KeySize + 4             // key, slot count
	slotSize     = 8 * (4 + nKinds)                  // start, responses, corrections, repeats, kinds
	unjoinedSize = 4                                 // slot count
	uslotSize    = 3 * 8                             // start, n, overflow
	entrySize    = 8 + 8 + 3*8 + 4 + 4 + 1           // end, hash, three fingerprints, tenant position, key position, corrected
	entrySizeV2  = 8 + 8 + traceSize + 4 + 4 + 4 + 1 // end, hash, trace, session, tenant, key position, corrected (+4: response, version 3)
	pendingSize  = 8 + 8 + traceSize + 6*4           // time, hash, trace, six strings (seven in version 3)
)

// MarshalBinary snapshots the whole state in the snapcodec layout: span
// keys (sorted) with their slots, unjoined keys (sorted) with theirs, the
// span index (entries sorted by end time, hash, then identity; each naming
// its key by position in the key list, then in the list of keys outside the
// match) and the pending corrections (sorted as they will be joined). Equal
// states give equal bytes.
func (p *Processor) MarshalBinary() ([]byte, error) {
	// Apply the index's cap first: it may drop entries and with them the
	// last spans of keys outside the match (an invisible change: the
	// indexed set is the same before and after).
	p.index.settle()
	if len(p.index.foreign) == 0 {
		return snapshotFormatV4.Marshal(func(e *snapcodec.Encoder) { p.encode(e, 4) }), nil
	}
	return snapshotFormat.MarshalSized(&p.snapSize, func(e *snapcodec.Encoder) { p.encode(e, 5) }), nil
}

func (p *Processor) encode(e *snapcodec.Encoder, version int) {
	keys := processors.SortedKeys(p.keys, nil)
	pos := make(map[*keyState]uint32, len(keys))
	e.Count(len(keys))
	for i, k := range keys {
		ks := p.keys[k]
		pos[ks] = uint32(i)
		e.Key(k)
		e.Count(len(ks.slots))
		for _, s := range ks.slots {
			e.I64(s.start)
			e.I64(s.responses)
			e.I64(s.corrections)
			e.I64(s.repeats)
			var kinds [nKinds]int64
			if s.kinds != nil {
				kinds = *s.kinds
			}
			for _, n := range kinds {
				e.I64(n)
			}
		}
	}
	snapcodec.PutKeyed(e, processors.SortedKeys(p.unjoined, nil), p.unjoined, func(u *unjoinedState, e *snapcodec.Encoder) {
		e.Count(len(u.slots))
		for _, s := range u.slots {
			e.I64(s.start)
			e.I64(s.n)
			e.I64(s.overflow)
		}
	})
	x := p.index
	if version >= 5 {
		foreign := processors.SortedKeys(x.foreign, nil)
		e.Count(len(foreign))
		for i, k := range foreign {
			pos[x.foreign[k]] = uint32(len(keys) + i)
			e.Key(k)
		}
	}
	e.I64(x.evicted)
	live := x.live()
	slices.SortFunc(live, func(ea, eb *entry) int {
		if c := compareEntries(ea, eb); c != 0 {
			return c
		}
		return cmp.Compare(pos[x.keyOf(ea)], pos[x.keyOf(eb)])
	})
	// The live entries' tenants, sorted, each entry naming its tenant by
	// position (interned ids depend on arrival order; positions do not).
	tpos := map[uint32]uint32{}
	var names []string
	for _, en := range live {
		if _, ok := tpos[en.tenant]; !ok {
			tpos[en.tenant] = 0
			names = append(names, x.tenantNames[en.tenant])
		}
	}
	slices.Sort(names)
	e.Count(len(names))
	for i, n := range names {
		e.String(n)
		tpos[x.tenants[n]] = uint32(i)
	}
	e.Count(len(live))
	for _, en := range live {
		e.I64(en.end)
		e.U64(en.h)
		e.U64(en.trace)
		e.U64(en.session)
		e.U64(en.resp)
		e.U32(tpos[en.tenant])
		e.U32(pos[x.keyOf(en)])
		e.Bool(en.corrected())
	}
	pend := slices.Clone(p.pending)
	slices.SortFunc(pend, comparePending)
	e.Count(len(pend))
	for _, c := range pend {
		e.I64(c.tc)
		e.U64(c.h)
		e.String(c.eventID)
		e.String(c.tenant)
		e.Raw(c.trace[:])
		e.String(c.session)
		e.String(c.resp)
		e.String(c.model)
		e.String(c.variant)
		e.String(string(c.kind))
	}
}

// compareEntries orders index entries by (end, hash, trace, session,
// response fingerprints), the snapshot order.
func compareEntries(a, b *entry) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	if c := cmp.Compare(a.h, b.h); c != 0 {
		return c
	}
	if c := cmp.Compare(a.trace, b.trace); c != 0 {
		return c
	}
	if c := cmp.Compare(a.session, b.session); c != 0 {
		return c
	}
	return cmp.Compare(a.resp, b.resp)
}

// comparePending is the join order of pending corrections: (time, hash,
// event id).
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
// On error, which wraps ErrCorrupt, the processor is left empty.
func (p *Processor) UnmarshalBinary(data []byte) error {
	p.reset()
	err := snapshotFormat.Unmarshal(data, func(d *snapcodec.Decoder) { p.decode(d, 5) })
	if err != nil {
		for v, f := range []snapcodec.Format{4: snapshotFormatV4, 3: snapshotFormatV3, 2: snapshotFormatV2} {
			if v < 2 {
				continue
			}
			p.reset()
			if f.Unmarshal(data, func(d *snapcodec.Decoder) { p.decode(d, v) }) == nil {
				return nil
			}
		}
		p.reset()
	}
	return err
}

func (p *Processor) reset() {
	p.keys = map[schemas.Key]*keyState{}
	p.unjoined = map[schemas.Key]*unjoinedState{}
	p.index = newSpanIndex(p.cfg.MaxIndexedSpans)
	p.pending = nil
}

// decode reads a snapshot of the given version into the freshly reset
// state, recording any problem in d.
func (p *Processor) decode(d *snapcodec.Decoder, version int) {
	eSize, pSize := entrySize, pendingSize+4
	switch version {
	case 3:
		eSize = entrySizeV2 + 4
	case 2:
		eSize, pSize = entrySizeV2, pendingSize
	}
	list := make([]*keyState, d.Count(keySize))
	for i := range list {
		k := d.Key()
		n := d.Count(slotSize)
		ks := &keyState{key: k, slots: make([]slot, n, max(n, p.slotRoom()))}
		for j := range ks.slots {
			s := &ks.slots[j]
			s.start, s.responses, s.corrections, s.repeats = d.I64(), d.I64(), d.I64(), d.I64()
			var kinds [nKinds]int64
			for m := range kinds {
				kinds[m] = d.I64()
			}
			if kinds != ([nKinds]int64{}) {
				s.kinds = &kinds
			}
		}
		if _, dup := p.keys[k]; dup {
			d.Failf("key %q twice", k.String())
		}
		if d.Err() != nil {
			return
		}
		list[i] = ks
		p.keys[k] = ks
	}
	p.unjoined = snapcodec.GetKeyed(d, unjoinedSize, func(d *snapcodec.Decoder, _ schemas.Key) *unjoinedState {
		u := &unjoinedState{slots: make([]uslot, d.Count(uslotSize))}
		for j := range u.slots {
			u.slots[j] = uslot{start: d.I64(), n: d.I64(), overflow: d.I64()}
		}
		return u
	})
	if version >= 5 {
		for range d.Count(snapcodec.KeySize) {
			k := d.Key()
			if _, dup := p.index.foreign[k]; dup {
				d.Failf("key %q twice outside the match", k.String())
			}
			if d.Err() != nil {
				return
			}
			list = append(list, p.index.foreignState(k))
		}
	}
	evicted := d.I64()
	var tenants []uint32 // version 4: interned ids by snapshot position
	if version >= 4 {
		tenants = make([]uint32, d.Count(4))
		for i := range tenants {
			tenants[i] = p.index.tenantID(d.String())
		}
	}
	ne := d.Count(eSize)
	if ne > p.cfg.MaxIndexedSpans {
		d.Failf("%d indexed spans, max_indexed_spans %d", ne, p.cfg.MaxIndexedSpans)
	}
	for range ne {
		e := entry{end: d.I64(), h: d.U64()}
		if version >= 4 {
			e.trace, e.session, e.resp = d.U64(), d.U64(), d.U64()
			if tp := int(d.U32()); tp < len(tenants) {
				e.tenant = tenants[tp]
			} else if d.Err() == nil {
				d.Failf("index entry names tenant %d of %d", tp, len(tenants))
			}
		} else {
			var trace schemas.TraceID
			copy(trace[:], d.Raw(len(trace)))
			session, resp := d.String(), ""
			if version >= 3 {
				resp = d.String()
			}
			tenant := d.String()
			seed := tenantSeed(tenant)
			e.tenant = p.index.tenantID(tenant)
			e.trace, e.session, e.resp = traceFingerprint(seed, trace), fingerprint(seed, fpSession, session), fingerprint(seed, fpResp, resp)
		}
		kp := int(d.U32())
		if d.Bool() {
			e.setCorrected()
		}
		if d.Err() == nil && kp >= len(list) {
			d.Failf("index entry names key %d of %d", kp, len(list))
		}
		if d.Err() != nil {
			return
		}
		p.index.add(e, list[kp])
	}
	for _, ks := range p.index.foreign {
		if ks.refs == 0 && d.Err() == nil {
			d.Failf("key %q outside the match has no indexed span", ks.key.String())
		}
	}
	p.index.evicted = evicted
	p.index.seal() // the index searchable, as a restore built it before
	np := d.Count(pSize)
	if np > p.cfg.MaxPendingCorrections {
		d.Failf("%d pending corrections, max_pending_corrections %d", np, p.cfg.MaxPendingCorrections)
	}
	if d.Err() != nil {
		return
	}
	p.pending = make([]pending, np)
	for i := range p.pending {
		c := &p.pending[i]
		c.tc, c.h = d.I64(), d.U64()
		c.eventID, c.tenant = d.String(), d.String()
		copy(c.trace[:], d.Raw(len(c.trace)))
		c.session = d.String()
		if version >= 3 {
			c.resp = d.String()
		}
		c.model, c.variant = d.String(), d.String()
		c.kind = schemas.CorrectionKind(d.String())
	}
}
