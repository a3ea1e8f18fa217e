package corrections

import (
	"encoding/binary"
	"math/bits"

	"github.com/fusebox-dev/fusebox/schemas"
)

// spanIndex finds the span a correction corrects: every indexed span is on
// a list by (tenant, trace id), a list by (tenant, gen_ai.response.id) and
// a list by (tenant, session id), and on a min-heap by (end time, span
// hash) that decides eviction. The lists are keyed by 64-bit fingerprints
// of those pairs (see fingerprint), not by the strings: an entry holds no
// string and no span, and a map lookup hashes one uint64.
//
// Bounded: at most max entries. When full, a span older (by end time, then
// hash) than every indexed one is not indexed; otherwise the oldest indexed
// span is evicted. So the indexed set is the max newest spans seen, whatever
// their arrival order. Time eviction (evictBefore) runs at evaluations.
//
// Memory: a 72-byte entry, a 16-byte heap item and up to three table
// slots (12 bytes each at a load of 3/8 to 3/4: ~16–32 bytes per id):
// ~100–180 bytes per span, so the default cap of 1,000,000 spans is
// ~100–180 MB per partition worker at most; in steady state the index holds the spans of
// the last JoinWindow.
type spanIndex struct {
	max int
	// entries is a slab in pages of entryPage (entry i at
	// entries[i/entryPage][i%entryPage]): growing it allocates a page and
	// never copies the entries; free slots are on the free list.
	entries   [][]entry
	size      int32 // slots in the slab
	free      []int32
	heap      itemHeap
	byTrace   fpTable // head of the (tenant, trace id) list
	bySession fpTable // head of the (tenant, session id) list
	byResp    fpTable // head of the (tenant, response id) list
	// tenants interns the tenants of indexed spans: an entry holds its
	// tenant's id and a join compares it exactly, so fingerprints can
	// collide only within one tenant. Never shrinks (tenants are bounded
	// by the cardinality guard); a restore rebuilds it from live entries.
	tenants     map[string]uint32
	tenantNames []string
	// keys are the keys of indexed spans, by the id their entries hold (4
	// bytes where a pointer took 8); a key has an id while it has entries
	// (keyState.refs > 0), and a released id is reused (freeKeys).
	keys     []*keyState
	freeKeys []uint32
	// foreign holds the keys of the spans indexed through ObserveUnmatched
	// (outside the SLO's match): they have no slots and live while they
	// have entries, as every key of keys does.
	foreign map[schemas.Key]*keyState
	// evicted counts spans evicted (or not indexed) because of the cap.
	evicted int64
}

// entry is an indexed span: its end time, hash and key, and the
// fingerprints of its join ids (0: none). 72 bytes.
type entry struct {
	end     int64
	h       uint64
	trace   uint64 // fingerprint of (tenant, trace id)
	session uint64 // of (tenant, session id)
	resp    uint64 // of (tenant, gen_ai.response.id)
	// key is the span's key's id (spanIndex.keys) in the low 31 bits
	// and, in the top bit, whether a correction joined this span (later
	// ones are repeats): a separate bool would pad the entry to 80 bytes.
	key    uint32
	tenant uint32 // the span's own tenant (the key may not keep it), interned
	// neighbours on the trace and session lists (doubly linked, so an
	// eviction unlinks in O(1)); -1 ends a list.
	nextTrace, nextSession, nextResp int32
	prevTrace, prevSession, prevResp int32
}

// correctedBit is entry.key's corrected flag.
const correctedBit = 1 << 31

func (e *entry) keyID() uint32   { return e.key &^ correctedBit }
func (e *entry) corrected() bool { return e.key&correctedBit != 0 }
func (e *entry) setCorrected()   { e.key |= correctedBit }

// heapItem is an entry's place in the eviction heap: its end time and the
// high 32 bits of its hash inline (16 bytes, where the whole hash made 24:
// ties on both are rare, and less reads the entry's full hash then).
type heapItem struct {
	end int64
	hHi uint32
	idx int32
}

func newHeapItem(e *entry, idx int32) heapItem {
	return heapItem{end: e.end, hHi: uint32(e.h >> 32), idx: idx}
}

// entryPage is the slab's page size in entries (72 KiB pages).
const entryPage = 1024

func newSpanIndex(max int) *spanIndex {
	return &spanIndex{max: max, tenants: map[string]uint32{}, byTrace: newFPTable(), bySession: newFPTable(), byResp: newFPTable(),
		foreign: map[schemas.Key]*keyState{}}
}

// foreignState returns the state of key as a key outside the SLO, made
// when it has none.
func (x *spanIndex) foreignState(key schemas.Key) *keyState {
	ks := x.foreign[key]
	if ks == nil {
		ks = &keyState{key: key, foreign: true}
		x.foreign[key] = ks
	}
	return ks
}

// tenantID interns tenant.
func (x *spanIndex) tenantID(tenant string) uint32 {
	id, ok := x.tenants[tenant]
	if !ok {
		id = uint32(len(x.tenantNames))
		x.tenants[tenant] = id
		x.tenantNames = append(x.tenantNames, tenant)
	}
	return id
}

// at returns entry i.
func (x *spanIndex) at(i int32) *entry { return &x.entries[i/entryPage][i%entryPage] }

func (x *spanIndex) len() int { return x.heap.len() }

// less is the eviction order: (end, hash, entry), the hash's high bits
// from the items and, on a tie of those, the whole hash from the entries.
func (x *spanIndex) less(a, b heapItem) bool {
	if a.end != b.end {
		return a.end < b.end
	}
	if a.hHi != b.hHi {
		return a.hHi < b.hHi
	}
	if a.idx == b.idx {
		return false
	}
	if ha, hb := x.at(a.idx).h, x.at(b.idx).h; ha != hb {
		return ha < hb
	}
	return a.idx < b.idx
}

// keyOf returns the key of entry e.
func (x *spanIndex) keyOf(e *entry) *keyState { return x.keys[e.keyID()] }

// add indexes a span of key ks; the caller has checked it has a trace or
// session id.
func (x *spanIndex) add(e entry, ks *keyState) {
	if x.heap.len() >= x.max {
		top := x.at(x.heap.at(0).idx)
		if e.end < top.end || (e.end == top.end && e.h <= top.h) {
			x.evicted++
			return
		}
		x.remove(x.heap.pop(x))
		x.evicted++
	}
	var idx int32
	if n := len(x.free); n > 0 {
		idx = x.free[n-1]
		x.free = x.free[:n-1]
	} else {
		idx = x.size
		if idx%entryPage == 0 {
			x.entries = append(x.entries, make([]entry, entryPage))
		}
		x.size++
	}
	e.nextTrace, e.nextSession, e.prevTrace, e.prevSession, e.nextResp, e.prevResp = -1, -1, -1, -1, -1, -1
	if e.trace != 0 {
		if head, ok := x.byTrace.swap(e.trace, idx); ok {
			e.nextTrace = head
			x.at(head).prevTrace = idx
		}
	}
	if e.session != 0 {
		if head, ok := x.bySession.swap(e.session, idx); ok {
			e.nextSession = head
			x.at(head).prevSession = idx
		}
	}
	if e.resp != 0 {
		if head, ok := x.byResp.swap(e.resp, idx); ok {
			e.nextResp = head
			x.at(head).prevResp = idx
		}
	}
	if ks.refs == 0 {
		if n := len(x.freeKeys); n > 0 {
			ks.id = x.freeKeys[n-1]
			x.freeKeys = x.freeKeys[:n-1]
			x.keys[ks.id] = ks
		} else {
			ks.id = uint32(len(x.keys))
			x.keys = append(x.keys, ks)
		}
	}
	ks.refs++
	e.key = ks.id | e.key&correctedBit
	*x.at(idx) = e
	x.heap.push(x, newHeapItem(&e, idx))
}

// evictBefore removes every span that ended before t.
func (x *spanIndex) evictBefore(t int64) {
	for x.heap.len() > 0 && x.heap.at(0).end < t {
		x.remove(x.heap.pop(x))
	}
}

// remove unlinks entry idx from its lists and frees it.
func (x *spanIndex) remove(idx int32) {
	e := x.at(idx)
	if e.trace != 0 {
		if e.nextTrace >= 0 {
			x.at(e.nextTrace).prevTrace = e.prevTrace
		}
		switch {
		case e.prevTrace >= 0:
			x.at(e.prevTrace).nextTrace = e.nextTrace
		case e.nextTrace >= 0:
			x.byTrace.set(e.trace, e.nextTrace)
		default:
			x.byTrace.del(e.trace)
		}
	}
	if e.session != 0 {
		if e.nextSession >= 0 {
			x.at(e.nextSession).prevSession = e.prevSession
		}
		switch {
		case e.prevSession >= 0:
			x.at(e.prevSession).nextSession = e.nextSession
		case e.nextSession >= 0:
			x.bySession.set(e.session, e.nextSession)
		default:
			x.bySession.del(e.session)
		}
	}
	if e.resp != 0 {
		if e.nextResp >= 0 {
			x.at(e.nextResp).prevResp = e.prevResp
		}
		switch {
		case e.prevResp >= 0:
			x.at(e.prevResp).nextResp = e.nextResp
		case e.nextResp >= 0:
			x.byResp.set(e.resp, e.nextResp)
		default:
			x.byResp.del(e.resp)
		}
	}
	ks := x.keys[e.keyID()]
	ks.refs--
	if ks.refs == 0 {
		x.keys[ks.id] = nil
		x.freeKeys = append(x.freeKeys, ks.id)
		if ks.foreign {
			delete(x.foreign, ks.key)
		}
	}
	*e = entry{}
	x.free = append(x.free, idx)
}

// find returns the entry a correction of tenant at tc joins, given the
// fingerprints of its (tenant, trace id), (tenant, response id) and
// (tenant, session id) (0: none): among the spans of that tenant (compared
// exactly, by interned id) on the trace list (else, when that finds none,
// the response-id list, else the session list) that ended in [tc-join,
// tc], the latest, ties broken by the smallest span hash. -1 when none.
func (x *spanIndex) find(tenant string, trace, resp, session uint64, tc, join int64) int32 {
	best := int32(-1)
	tid, ok := x.tenants[tenant]
	if !ok {
		return best // no span of tenant was ever indexed
	}
	if trace != 0 {
		if head, ok := x.byTrace.get(trace); ok {
			for j := head; j >= 0; j = x.at(j).nextTrace {
				best = x.better(best, j, tid, tc, join)
			}
		}
	}
	if best < 0 && resp != 0 {
		if head, ok := x.byResp.get(resp); ok {
			for j := head; j >= 0; j = x.at(j).nextResp {
				best = x.better(best, j, tid, tc, join)
			}
		}
	}
	if best < 0 && session != 0 {
		if head, ok := x.bySession.get(session); ok {
			for j := head; j >= 0; j = x.at(j).nextSession {
				best = x.better(best, j, tid, tc, join)
			}
		}
	}
	return best
}

// better returns j when it qualifies and beats best, else best.
func (x *spanIndex) better(best, j int32, tenant uint32, tc, join int64) int32 {
	e := x.at(j)
	if e.tenant != tenant || e.end > tc || e.end < tc-join {
		return best
	}
	if best < 0 {
		return j
	}
	b := x.at(best)
	if e.end > b.end || (e.end == b.end && e.h < b.h) {
		return j
	}
	return best
}

// Fingerprint domains: the three lists' ids are hashed apart.
const (
	fpTrace   = 0x74 // 't'
	fpSession = 0x73 // 's'
	fpResp    = 0x72 // 'r'
)

// tenantSeed is the part of every fingerprint of tenant's ids that
// depends on the tenant alone, computed once per span or correction.
func tenantSeed(tenant string) uint64 { return final(absorb(0x243f6a8885a308d3, tenant)) }

// fingerprint is a 64-bit hash of (domain, tenant, id), never 0 (0 means
// no id); "" has no fingerprint. The hash is fixed (no per-process seed:
// snapshots hold fingerprints): 8 bytes at a time, each block folded into
// the state by a 64x64→128-bit multiply (wyhash's mixing) whose product is
// xored back into the state, so no block can cancel what came before; each
// string's length is absorbed first.
//
// Collisions: the tenant is compared exactly (entries hold its interned
// id), so only two ids of one tenant with one fingerprint can be confused.
// A correction probes up to three tables (trace, then response id, then
// session), so for ids that are not chosen to collide the chance that its
// fingerprint meets another live id's is at most (L_trace + L_resp +
// L_session)/2^64, L the live ids of each (≤ MaxIndexedSpans each): 1.6e-13
// per correction at the default cap of 1,000,000. What a collision does:
// the correction joins the other span (and does not fall back to the
// response-id or session list), is attributed to that span's key, and
// marks that span corrected, so a later correction of it counts as a
// repeat. Ids are not verified (that would mean keeping them); the hash is
// not keyed, so a tenant that chooses colliding ids can misattribute its
// own corrections among its own spans, never another tenant's.
func fingerprint(seed uint64, domain byte, id string) uint64 {
	if id == "" {
		return 0
	}
	return nonZero(final(absorb(mix(seed, uint64(domain)), id)))
}

// traceFingerprint is fingerprint of a trace id (16 bytes; zero: none).
func traceFingerprint(seed uint64, t schemas.TraceID) uint64 {
	if t.IsZero() {
		return 0
	}
	h := mix(mix(seed, fpTrace), binary.LittleEndian.Uint64(t[:8]))
	return nonZero(final(mix(h, binary.LittleEndian.Uint64(t[8:]))))
}

func nonZero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// mix folds block v into state h: h xor the folded product of (v, h), so a
// zero product leaves h as it was instead of wiping it.
func mix(h, v uint64) uint64 { return h ^ mum(v^0xa0761d6478bd642f, h^0xe7037ed1a0b428db) }

// final spreads the state over every bit.
func final(h uint64) uint64 { return mum(h^0x589965cc75374cc3, 0x1d8e4e27c47d124f) ^ h }

// absorb folds s into h: its length, then 8 bytes at a time, then the
// tail.
func absorb(h uint64, s string) uint64 {
	h = mix(h, uint64(len(s)))
	for len(s) >= 8 {
		v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = mix(h, v)
		s = s[8:]
	}
	var v uint64
	for i := range len(s) {
		v |= uint64(s[i]) << (8 * i)
	}
	return mix(h, v)
}

// mum is the xor of the two halves of the 128-bit product.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
