package corrections

import (
	"github.com/fusebox-dev/fusebox/schemas"
)

// spanIndex finds the span a correction corrects: every indexed span is on
// a list by trace id, a list by (tenant, gen_ai.response.id) and a list by
// (tenant, session id), and on a min-heap by (end time, span hash) that
// decides eviction.
//
// Bounded: at most max entries. When full, a span older (by end time, then
// hash) than every indexed one is not indexed; otherwise the oldest indexed
// span is evicted. So the indexed set is the max newest spans seen, whatever
// their arrival order. Time eviction (evictBefore) runs at evaluations.
//
// Memory: ~170 bytes per entry (a 104-byte entry, a 24-byte heap item and
// two map slots), so the default cap of 1,000,000 spans is ~170 MB per
// partition worker at most;
// in steady state the index holds the spans of the last JoinWindow.
type spanIndex struct {
	max       int
	entries   []entry // slab; free slots are on the free list
	free      []int32
	heap      []heapItem
	byTrace   map[schemas.TraceID]int32 // head of the trace list
	bySession map[sessionKey]int32      // head of the session list
	byResp    map[sessionKey]int32      // head of the response-id list (tenant, response id)
	// evicted counts spans evicted (or not indexed) because of the cap.
	evicted int64
}

type sessionKey struct{ tenant, session string }

type entry struct {
	end     int64
	h       uint64
	trace   schemas.TraceID
	session string
	resp    string // gen_ai.response.id
	tenant  string // the span's own tenant (the key may not keep it)
	ks      *keyState
	// neighbours on the trace and session lists (doubly linked, so an
	// eviction unlinks in O(1)); -1 ends a list.
	nextTrace, nextSession, nextResp int32
	prevTrace, prevSession, prevResp int32
	// corrected is set once a correction joined this span: later ones
	// are repeats.
	corrected bool
}

type heapItem struct {
	end int64
	h   uint64
	idx int32
}

func newSpanIndex(max int) *spanIndex {
	return &spanIndex{max: max, byTrace: map[schemas.TraceID]int32{}, bySession: map[sessionKey]int32{}, byResp: map[sessionKey]int32{}}
}

func (x *spanIndex) len() int { return len(x.heap) }

func less(a, b heapItem) bool {
	if a.end != b.end {
		return a.end < b.end
	}
	if a.h != b.h {
		return a.h < b.h
	}
	return a.idx < b.idx
}

// add indexes a span; the caller has checked it has a trace or session id.
func (x *spanIndex) add(e entry) {
	if len(x.heap) >= x.max {
		top := x.heap[0]
		if e.end < top.end || (e.end == top.end && e.h <= top.h) {
			x.evicted++
			return
		}
		x.remove(x.pop())
		x.evicted++
	}
	var idx int32
	if n := len(x.free); n > 0 {
		idx = x.free[n-1]
		x.free = x.free[:n-1]
	} else {
		idx = int32(len(x.entries))
		x.entries = append(x.entries, entry{})
	}
	e.nextTrace, e.nextSession, e.prevTrace, e.prevSession, e.nextResp, e.prevResp = -1, -1, -1, -1, -1, -1
	if !e.trace.IsZero() {
		if head, ok := x.byTrace[e.trace]; ok {
			e.nextTrace = head
			x.entries[head].prevTrace = idx
		}
		x.byTrace[e.trace] = idx
	}
	if e.session != "" {
		sk := sessionKey{e.tenant, e.session}
		if head, ok := x.bySession[sk]; ok {
			e.nextSession = head
			x.entries[head].prevSession = idx
		}
		x.bySession[sk] = idx
	}
	if e.resp != "" {
		rk := sessionKey{e.tenant, e.resp}
		if head, ok := x.byResp[rk]; ok {
			e.nextResp = head
			x.entries[head].prevResp = idx
		}
		x.byResp[rk] = idx
	}
	e.ks.refs++
	x.entries[idx] = e
	x.push(heapItem{end: e.end, h: e.h, idx: idx})
}

// evictBefore removes every span that ended before t.
func (x *spanIndex) evictBefore(t int64) {
	for len(x.heap) > 0 && x.heap[0].end < t {
		x.remove(x.pop())
	}
}

// remove unlinks entry idx from its lists and frees it.
func (x *spanIndex) remove(idx int32) {
	e := &x.entries[idx]
	if !e.trace.IsZero() {
		if e.nextTrace >= 0 {
			x.entries[e.nextTrace].prevTrace = e.prevTrace
		}
		switch {
		case e.prevTrace >= 0:
			x.entries[e.prevTrace].nextTrace = e.nextTrace
		case e.nextTrace >= 0:
			x.byTrace[e.trace] = e.nextTrace
		default:
			delete(x.byTrace, e.trace)
		}
	}
	if e.session != "" {
		if e.nextSession >= 0 {
			x.entries[e.nextSession].prevSession = e.prevSession
		}
		switch {
		case e.prevSession >= 0:
			x.entries[e.prevSession].nextSession = e.nextSession
		case e.nextSession >= 0:
			x.bySession[sessionKey{e.tenant, e.session}] = e.nextSession
		default:
			delete(x.bySession, sessionKey{e.tenant, e.session})
		}
	}
	if e.resp != "" {
		if e.nextResp >= 0 {
			x.entries[e.nextResp].prevResp = e.prevResp
		}
		switch {
		case e.prevResp >= 0:
			x.entries[e.prevResp].nextResp = e.nextResp
		case e.nextResp >= 0:
			x.byResp[sessionKey{e.tenant, e.resp}] = e.nextResp
		default:
			delete(x.byResp, sessionKey{e.tenant, e.resp})
		}
	}
	e.ks.refs--
	*e = entry{}
	x.free = append(x.free, idx)
}

// find returns the entry a correction at tc of tenant joins: among the
// spans on the trace list (else, when that finds none, the response-id
// list, else the session list)
// of the same tenant that ended in [tc-join, tc], the latest, ties broken
// by the smallest span hash. -1 when none.
func (x *spanIndex) find(tenant string, trace schemas.TraceID, resp, session string, tc, join int64) int32 {
	best := int32(-1)
	if !trace.IsZero() {
		if head, ok := x.byTrace[trace]; ok {
			for j := head; j >= 0; j = x.entries[j].nextTrace {
				best = x.better(best, j, tenant, tc, join)
			}
		}
	}
	if best < 0 && resp != "" {
		if head, ok := x.byResp[sessionKey{tenant, resp}]; ok {
			for j := head; j >= 0; j = x.entries[j].nextResp {
				best = x.better(best, j, tenant, tc, join)
			}
		}
	}
	if best < 0 && session != "" {
		if head, ok := x.bySession[sessionKey{tenant, session}]; ok {
			for j := head; j >= 0; j = x.entries[j].nextSession {
				best = x.better(best, j, tenant, tc, join)
			}
		}
	}
	return best
}

// better returns j when it qualifies and beats best, else best.
func (x *spanIndex) better(best, j int32, tenant string, tc, join int64) int32 {
	e := &x.entries[j]
	if e.tenant != tenant || e.end > tc || e.end < tc-join {
		return best
	}
	if best < 0 {
		return j
	}
	b := &x.entries[best]
	if e.end > b.end || (e.end == b.end && e.h < b.h) {
		return j
	}
	return best
}

func (x *spanIndex) push(it heapItem) {
	x.heap = append(x.heap, it)
	i := len(x.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(x.heap[i], x.heap[p]) {
			break
		}
		x.heap[i], x.heap[p] = x.heap[p], x.heap[i]
		i = p
	}
}

func (x *spanIndex) pop() int32 {
	h := x.heap
	top := h[0].idx
	n := len(h) - 1
	h[0] = h[n]
	x.heap = h[:n]
	h = x.heap
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top
}
