package corrections

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/fusebox-dev/fusebox/schemas"
)

// refIndex is the join index's specification, span by span: a list of
// entries with the cap applied at every add (a span older by (end, hash)
// than every indexed one is not indexed, else the oldest is evicted) and
// a join by a scan of every entry.
type refIndex struct {
	max     int
	e       []refEntry
	evicted int64
}

type refEntry struct {
	entry
	ks *keyState
}

func (r *refIndex) add(e entry, ks *keyState) {
	if len(r.e) >= r.max {
		m := 0
		for i := range r.e {
			if compareEntries(&r.e[i].entry, &r.e[m].entry) < 0 {
				m = i
			}
		}
		r.evicted++
		if compareEntries(&e, &r.e[m].entry) <= 0 {
			return
		}
		r.e = slices.Delete(r.e, m, m+1)
	}
	r.e = append(r.e, refEntry{e, ks})
}

func (r *refIndex) evictBefore(t int64) {
	r.e = slices.DeleteFunc(r.e, func(e refEntry) bool { return e.end < t })
}

func (r *refIndex) find(tenant uint32, fps [3]uint64, tc, join int64) int {
	for kind, fp := range fps {
		if fp == 0 {
			continue
		}
		best := -1
		for i := range r.e {
			e := &r.e[i]
			if fpOf(&e.entry, kind) != fp || e.tenant != tenant || e.end > tc || e.end < tc-join {
				continue
			}
			if best < 0 || e.end > r.e[best].end || e.end == r.e[best].end && e.h < r.e[best].h {
				best = i
			}
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

// TestIndexMatchesSpecification: 60,000 random adds, joins and time
// evictions, in arrival orders up to 40 time units out of order, with end
// times that tie often, fingerprints shared by many spans (and the same
// fingerprint under two tenants), and a cap of 300 hit all along: after
// every step the index's joins, its indexed set (with the corrected bits
// and keys), its len and its evictions equal the specification's.
func TestIndexMatchesSpecification(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := newSpanIndex(300)
	ref := &refIndex{max: 300}
	keys := make([]*keyState, 12)
	refKeys := make([]*keyState, len(keys)) // the reference's own (refs are the index's)
	x.tenantID("t0")
	x.tenantID("t1") // ids 0 and 1: a key's tenant is t(i%2)
	for i := range keys {
		k := schemas.Key{Tenant: fmt.Sprint("t", i%2), Model: fmt.Sprint("m", i)}
		keys[i], refKeys[i] = &keyState{key: k}, &keyState{key: k}
	}
	fp := func(n uint64) uint64 {
		if r.IntN(4) == 0 {
			return 0
		}
		return 1 + r.Uint64N(n)
	}
	now, joins, found := int64(1000), 0, 0
	for step := range 60000 {
		switch op := r.IntN(100); {
		case op < 70:
			now += int64(r.IntN(2))
			ki := r.IntN(len(keys))
			e := entry{end: now - int64(r.IntN(40)), h: r.Uint64(), trace: fp(100), session: fp(20), resp: fp(100), tenant: uint32(ki % 2)}
			if e.trace|e.session|e.resp == 0 {
				e.trace = 1
			}
			x.add(e, keys[ki])
			ref.add(e, refKeys[ki])
		case op < 98:
			tenant := uint32(r.IntN(2))
			fps := [3]uint64{byTrace: fp(100), byResp: fp(100), bySession: fp(20)}
			tc, join := now-int64(r.IntN(50)), int64(20+r.IntN(200))
			j := x.find(x.tenantNames[tenant], fps[byTrace], fps[byResp], fps[bySession], tc, join)
			i := ref.find(tenant, fps, tc, join)
			joins++
			if (j >= 0) != (i >= 0) {
				t.Fatalf("step %d: index joins %d, specification %d", step, j, i)
			}
			if i >= 0 {
				found++
				e, w := x.at(j), &ref.e[i]
				if e.end != w.end || e.h != w.h || x.keyOf(e).key != w.ks.key || e.corrected() != w.corrected() {
					t.Fatalf("step %d: joined %+v, want %+v", step, *e, w.entry)
				}
				e.setCorrected()
				w.setCorrected()
			}
		default:
			t := now - 150 - int64(r.IntN(150))
			x.evictBefore(t)
			ref.evictBefore(t)
		}
		if x.len() != len(ref.e) || x.evictedCount() != ref.evicted {
			t.Fatalf("step %d: len %d evicted %d, want %d and %d", step, x.len(), x.evictedCount(), len(ref.e), ref.evicted)
		}
		if step%97 != 0 {
			continue
		}
		type view struct {
			end       int64
			h         uint64
			key       schemas.Key
			corrected bool
		}
		var got, want []view
		for _, e := range x.live() {
			got = append(got, view{e.end, e.h, x.keyOf(e).key, e.corrected()})
		}
		for _, e := range ref.e {
			want = append(want, view{e.end, e.h, e.ks.key, e.corrected()})
		}
		byEndHash := func(a, b view) int {
			return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.h, b.h))
		}
		slices.SortFunc(got, byEndHash)
		slices.SortFunc(want, byEndHash)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: indexed set differs from the specification's (%d and %d entries)", step, len(got), len(want))
		}
		var refs int32
		for _, k := range keys {
			refs += k.refs
		}
		if int(refs) != len(got) {
			t.Fatalf("step %d: refs sum %d, %d live entries", step, refs, len(got))
		}
	}
	if found < joins/4 || found == joins || ref.evicted == 0 {
		t.Fatalf("%d of %d joins found a span, %d evicted by the cap: the test proves little", found, joins, ref.evicted)
	}
	if testing.Verbose() {
		t.Logf("%d of %d joins found a span, %d evicted by the cap", found, joins, ref.evicted)
	}
}

// TestIndexCopiesOfOneSpan: a span indexed twice (equal end, hash and
// ids) is corrected once; later corrections find the corrected copy and
// count as repeats, in one run or two.
func TestIndexCopiesOfOneSpan(t *testing.T) {
	for _, seal := range []bool{false, true} {
		x := newSpanIndex(100)
		ks := &keyState{key: schemas.Key{Tenant: "t"}}
		e := entry{end: 10, h: 5, trace: 77, tenant: x.tenantID("t")}
		x.add(e, ks)
		if seal {
			x.seal()
		}
		x.add(e, ks)
		for i := range 4 {
			j := x.find("t", 77, 0, 0, 12, 5)
			if j < 0 {
				t.Fatal("no join")
			}
			if got := x.at(j).corrected(); got != (i > 0) {
				t.Fatalf("seal %v, correction %d: joined a copy with corrected %v", seal, i, got)
			}
			x.at(j).setCorrected()
		}
	}
}

// TestStateLayout: the sizes the Memory section of the package doc and
// spanIndex's count on (a field added to entry pads it by 8 bytes a span).
func TestStateLayout(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"entry", unsafe.Sizeof(entry{}), 48},
		{"slot", unsafe.Sizeof(slot{}), 40},
	} {
		if c.got > c.want {
			t.Errorf("%s is %d bytes, want at most %d", c.name, c.got, c.want)
		}
	}
}
