package corrections

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"sort"

	"github.com/fusebox-dev/fusebox/schemas"
)

// spanIndex finds the span a correction corrects. Spans are kept in runs:
// the spans added since the last seal are appended, unsorted, to the open
// run; sealing (before a join, at a time eviction, or when the cap's slack
// is used up) sorts them by (end time, span hash, fingerprints) into a new
// run with three arrays of positions, one per join id, sorted by (that
// id's fingerprint, position descending: end time descending). A join
// binary-searches each run whose end times overlap [tc-join, tc] (about
// JoinWindow/Every + 1 runs in steady state); a time eviction advances
// each run's start past the spans that ended before it (a run's entries
// are in end order) and drops runs left empty. The fingerprints are of
// (tenant, trace id), (tenant, gen_ai.response.id) and (tenant, session
// id) (see fingerprint), not the strings: an entry holds no string and no
// span.
//
// Why runs and not hash tables: joins happen only at evaluations, so an
// index that is only read there need not be kept searchable span by span.
// A span costs an append (no hash-table insert, a cache miss per id with
// the tables this replaced) and its share of one sort per evaluation.
//
// Bounded: at most max entries are visible. The cap is applied when the
// index is read (a join, a time eviction, a snapshot, live) or when the
// held entries exceed max by a slack of max/8: the smallest entries by
// (end, hash, fingerprints) are dropped until max are left. That is the
// set the eager rule (a span older than every indexed one is not indexed,
// else the oldest is evicted, span by span) leaves, since the max largest
// of a set do not depend on the order its members came in; len and
// evictedCount report that set before it is applied. So the indexed set
// is the max newest spans seen, whatever their arrival order.
//
// Memory: a 48-byte entry and a 4-byte position per id it has (one to
// three): 52–60 bytes per span, against ~125 with the tables this
// replaced (a 72-byte entry with six list links, a 16-byte heap item,
// three table slots at 3/8–3/4 load): sorted runs need no links, no heap
// (a run in end order is its own eviction order) and no empty slots.
// Plus the open run's buffer, which keeps the capacity of the last batch
// between two seals (48 bytes per span of it; let go when twice the next
// batch), and, until a run is compacted (over half of it evicted), its
// evicted entries. The default cap of 1,000,000 spans is ~60 MB per
// partition worker, up to an eighth more while the slack fills; in
// steady state the index holds the spans of the last JoinWindow.
type spanIndex struct {
	max int
	// open holds the entries added since the last seal, in arrival
	// order; runs the sealed ones, in seal order.
	open []entry
	runs []*run
	// n counts the entries held (open and sealed, not yet evicted), which
	// may exceed max until the cap is applied (settle).
	n int
	// scratch and tmp are seal's buffers of (fingerprint, position)
	// pairs.
	scratch, tmp []fpPos
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
	// evicted counts spans evicted (or not indexed) because of the cap,
	// as applied (evictedCount adds those still to be).
	evicted int64
}

// run is a sealed batch of entries: e sorted by compareEntries, e[:lo]
// evicted; trace, session and resp are the positions in e of the entries
// with that id, each sorted by (fingerprint, position descending), so that
// the first match of a tenant at or before a correction's time is at the
// run's latest end time (ties on it to the smallest hash: findIn reads
// them all).
type run struct {
	e                    []entry
	lo                   int
	trace, session, resp []uint32
}

// Join id kinds, the order a join tries them in.
const (
	byTrace = iota
	byResp
	bySession
)

func (r *run) positions(kind int) []uint32 {
	switch kind {
	case byTrace:
		return r.trace
	case byResp:
		return r.resp
	}
	return r.session
}

func fpOf(e *entry, kind int) uint64 {
	switch kind {
	case byTrace:
		return e.trace
	case byResp:
		return e.resp
	}
	return e.session
}

// fpPos is a fingerprint and a position, sorted at a seal.
type fpPos struct {
	fp  uint64
	pos uint32
}

// entry is an indexed span: its end time, hash and key, and the
// fingerprints of its join ids (0: none). 48 bytes.
type entry struct {
	end     int64
	h       uint64
	trace   uint64 // fingerprint of (tenant, trace id)
	session uint64 // of (tenant, session id)
	resp    uint64 // of (tenant, gen_ai.response.id)
	// key is the span's key's id (spanIndex.keys) in the low 31 bits
	// and, in the top bit, whether a correction joined this span (later
	// ones are repeats): a separate bool would pad the entry to 56 bytes.
	key    uint32
	tenant uint32 // the span's own tenant (the key may not keep it), interned
}

// correctedBit is entry.key's corrected flag.
const correctedBit = 1 << 31

func (e *entry) keyID() uint32   { return e.key &^ correctedBit }
func (e *entry) corrected() bool { return e.key&correctedBit != 0 }
func (e *entry) setCorrected()   { e.key |= correctedBit }

func newSpanIndex(max int) *spanIndex {
	return &spanIndex{max: max, tenants: map[string]uint32{}, foreign: map[schemas.Key]*keyState{}}
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

// at returns the entry of handle j (from find; valid until the index
// changes): the run in the high 32 bits, the position in the low.
func (x *spanIndex) at(j int64) *entry { return &x.runs[j>>32].e[uint32(j)] }

// len is the number of indexed spans (the cap applied).
func (x *spanIndex) len() int { return min(x.n, x.max) }

// evictedCount is the number of spans evicted (or not indexed) because of
// the cap, counting those the cap will drop when next applied.
func (x *spanIndex) evictedCount() int64 { return x.evicted + int64(max(x.n-x.max, 0)) }

// keyOf returns the key of entry e.
func (x *spanIndex) keyOf(e *entry) *keyState { return x.keys[e.keyID()] }

// add indexes a span of key ks; the caller has checked it has a trace,
// session or response id.
func (x *spanIndex) add(e entry, ks *keyState) {
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
	x.open = append(x.open, e)
	x.n++
	if x.n > x.max+x.max/8 {
		x.settle()
	}
}

// settle seals the open run and applies the cap.
func (x *spanIndex) settle() {
	x.seal()
	if x.n > x.max {
		x.trim(x.n - x.max)
	}
}

// seal sorts the open run into a new run.
func (x *spanIndex) seal() {
	if len(x.open) == 0 {
		return
	}
	slices.SortFunc(x.open, func(a, b entry) int { return compareEntries(&a, &b) })
	r := &run{e: slices.Clone(x.open)}
	r.trace = x.sortedPositions(r.e, byTrace)
	r.session = x.sortedPositions(r.e, bySession)
	r.resp = x.sortedPositions(r.e, byResp)
	x.runs = append(x.runs, r)
	// The buffers are kept for the next batch, of about this size, unless
	// they are much larger (a restore's, or a burst's): then they go.
	if cap(x.open) > 2*len(x.open) {
		x.open = nil
	} else {
		x.open = x.open[:0]
	}
	if cap(x.scratch) > max(2*len(r.e), 1024) {
		x.scratch, x.tmp = nil, nil
	}
}

// sortedPositions returns the positions of e's entries with an id of kind,
// sorted by (fingerprint, position descending): e is sorted by (end,
// hash), so within one fingerprint the end times descend (findIn reads
// every match of the first matching end time, so their order within it
// does not matter).
func (x *spanIndex) sortedPositions(e []entry, kind int) []uint32 {
	s := x.scratch[:0]
	for i := len(e) - 1; i >= 0; i-- {
		if fp := fpOf(&e[i], kind); fp != 0 {
			s = append(s, fpPos{fp, uint32(i)})
		}
	}
	if len(s) == 0 {
		x.scratch = s
		return nil
	}
	x.tmp = slices.Grow(x.tmp[:0], len(s))[:len(s)]
	sorted := sortByFP(s, x.tmp)
	out := make([]uint32, len(sorted))
	for i := range sorted {
		out[i] = sorted[i].pos
	}
	x.scratch = s[:0]
	return out
}

// sortByFP sorts s by fingerprint, stably, using tmp (as long as s) as
// the other buffer, and returns whichever holds the result: a
// least-significant-digit radix sort, 8 bits a pass, a pass skipped when
// every element has the same byte there; below 256 elements a
// comparison sort (by fingerprint, then position descending: the order
// the stable sort gives the input, which comes in descending positions).
func sortByFP(s, tmp []fpPos) []fpPos {
	if len(s) < 256 {
		slices.SortFunc(s, func(a, b fpPos) int {
			if a.fp != b.fp {
				return cmp.Compare(a.fp, b.fp)
			}
			return cmp.Compare(b.pos, a.pos)
		})
		return s
	}
	var counts [8][256]int
	for _, v := range s {
		for d := range 8 {
			counts[d][byte(v.fp>>(8*d))]++
		}
	}
	src, dst := s, tmp
	for d := range 8 {
		c := &counts[d]
		if c[byte(src[0].fp>>(8*d))] == len(src) {
			continue
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, v := range src {
			k := byte(v.fp >> (8 * d))
			dst[c[k]] = v
			c[k]++
		}
		src, dst = dst, src
	}
	return src
}

// trim evicts the k smallest entries by compareEntries (all runs sealed):
// each is the smallest remaining front of a run.
func (x *spanIndex) trim(k int) {
	x.evicted += int64(k)
	for range k {
		var m *run
		for _, r := range x.runs {
			if r.lo < len(r.e) && (m == nil || compareEntries(&r.e[r.lo], &m.e[m.lo]) < 0) {
				m = r
			}
		}
		x.release(&m.e[m.lo])
		m.lo++
	}
	x.tidy()
}

// evictBefore removes every span that ended before t.
func (x *spanIndex) evictBefore(t int64) {
	x.settle()
	for _, r := range x.runs {
		for r.lo < len(r.e) && r.e[r.lo].end < t {
			x.release(&r.e[r.lo])
			r.lo++
		}
	}
	x.tidy()
}

// release lets go of evicted entry e's key.
func (x *spanIndex) release(e *entry) {
	x.n--
	ks := x.keys[e.keyID()]
	ks.refs--
	if ks.refs == 0 {
		x.keys[ks.id] = nil
		x.freeKeys = append(x.freeKeys, ks.id)
		if ks.foreign {
			delete(x.foreign, ks.key)
		}
	}
}

// tidy drops empty runs and compacts those more than half evicted.
func (x *spanIndex) tidy() {
	runs := x.runs[:0]
	for _, r := range x.runs {
		switch {
		case r.lo == len(r.e):
			continue
		case 2*r.lo > len(r.e):
			r.compact()
		}
		runs = append(runs, r)
	}
	clear(x.runs[len(runs):])
	x.runs = runs
}

// compact copies r's live entries to a new array, keeping the order of
// its position arrays.
func (r *run) compact() {
	lo := uint32(r.lo)
	r.e = slices.Clone(r.e[lo:])
	r.lo = 0
	shift := func(p []uint32) []uint32 {
		out := make([]uint32, 0, len(p))
		for _, i := range p {
			if i >= lo {
				out = append(out, i-lo)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	r.trace, r.session, r.resp = shift(r.trace), shift(r.session), shift(r.resp)
}

// live returns the indexed entries (the cap applied), runs in seal order,
// each in compareEntries order.
func (x *spanIndex) live() []*entry {
	x.settle()
	out := make([]*entry, 0, x.n)
	for _, r := range x.runs {
		for i := r.lo; i < len(r.e); i++ {
			out = append(out, &r.e[i])
		}
	}
	return out
}

// find returns the handle of the entry a correction of tenant at tc
// joins, given the fingerprints of its (tenant, trace id), (tenant,
// response id) and (tenant, session id) (0: none): among the spans of that
// tenant (compared exactly, by interned id) with that trace id (else, when
// that finds none, that response id, else that session id) that ended in
// [tc-join, tc], the latest, ties broken by the smallest span hash (and,
// between copies of one span, a corrected one first, so that a span's
// later corrections are repeats). -1 when none.
func (x *spanIndex) find(tenant string, trace, resp, session uint64, tc, join int64) int64 {
	x.settle()
	tid, ok := x.tenants[tenant]
	if !ok {
		return -1 // no span of tenant was ever indexed
	}
	for kind, fp := range [3]uint64{byTrace: trace, byResp: resp, bySession: session} {
		if fp == 0 {
			continue
		}
		best := int64(-1)
		for ri, r := range x.runs {
			if r.e[len(r.e)-1].end < tc-join || r.e[r.lo].end > tc {
				continue
			}
			best = x.findIn(best, ri, r, kind, fp, tid, tc, join)
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

// findIn returns the better of best and run ri's best match.
func (x *spanIndex) findIn(best int64, ri int, r *run, kind int, fp uint64, tid uint32, tc, join int64) int64 {
	pos := r.positions(kind)
	i := sort.Search(len(pos), func(i int) bool {
		e := &r.e[pos[i]]
		f := fpOf(e, kind)
		return f > fp || f == fp && e.end <= tc
	})
	// The run's first match is its best but for copies of one span
	// (equal end and hash), which follow it.
	found, first := false, int64(0)
	for ; i < len(pos); i++ {
		p := pos[i]
		e := &r.e[p]
		if fpOf(e, kind) != fp || e.end < tc-join || found && e.end != first {
			break
		}
		if int(p) < r.lo || e.tenant != tid {
			continue
		}
		found, first = true, e.end
		best = x.better(best, int64(ri)<<32|int64(p))
	}
	return best
}

// better returns j when it beats best: a later end, else a smaller hash,
// else (copies of one span) corrected where best is not.
func (x *spanIndex) better(best, j int64) int64 {
	if best < 0 {
		return j
	}
	e, b := x.at(j), x.at(best)
	switch {
	case e.end != b.end:
		if e.end > b.end {
			return j
		}
	case e.h != b.h:
		if e.h < b.h {
			return j
		}
	case e.corrected() && !b.corrected():
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
