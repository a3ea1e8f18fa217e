package corrections

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestFPTableMatchesMap: random swaps, sets and deletes against a Go map,
// with keys drawn from a small range (long probe runs, wrap-around at the
// array's end, deletions inside runs) and through growing and shrinking.
func TestFPTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tb := newFPTable()
	ref := map[uint64]int32{}
	for step := range 200000 {
		span := uint64(64)
		if step > 100000 {
			span = 5000
		}
		k := 1 + r.Uint64N(span)
		if step%7 == 0 {
			k = k<<40 | 1 // same low bits: one long probe run
		}
		switch op := r.IntN(10); {
		case op < 5:
			v := int32(r.IntN(1000))
			old, ok := tb.swap(k, v)
			rold, rok := ref[k]
			if ok != rok || old != rold {
				t.Fatalf("step %d swap %d: %d %v, want %d %v", step, k, old, ok, rold, rok)
			}
			ref[k] = v
		case op < 9 || step > 150000:
			tb.del(k)
			delete(ref, k)
		default:
			v, ok := tb.get(k)
			if rv, rok := ref[k]; ok != rok || v != rv {
				t.Fatalf("step %d get %d: %d %v, want %d %v", step, k, v, ok, rv, rok)
			}
		}
		if tb.len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", step, tb.len(), len(ref))
		}
	}
	for k, v := range ref {
		if got, ok := tb.get(k); !ok || got != v {
			t.Fatalf("final get %d: %d %v, want %d", k, got, ok, v)
		}
	}
}

// TestItemHeapOrder: pushes and pops across several pages come out in
// (end, hash, entry) order, with pages released as the heap shrinks.
func TestItemHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	// The heap reads tied hashes from the index's entries: hashes of 4
	// values in the high or the low 32 bits make ties of both kinds.
	x := newSpanIndex(1 << 20)
	n := 3*heapPage + 17
	for i := range n {
		if i%entryPage == 0 {
			x.entries = append(x.entries, make([]entry, entryPage))
		}
		hash := r.Uint64N(4) << (32 * r.Uint64N(2))
		*x.at(int32(i)) = entry{end: int64(r.IntN(5000)), h: hash}
	}
	h := &x.heap
	var last heapItem
	for round := range 3 {
		for i := range n {
			h.push(x, newHeapItem(x.at(int32(i)), int32(i)))
		}
		for i := 0; h.len() > 0; i++ {
			top := *h.at(0)
			if got := h.pop(x); got != top.idx {
				t.Fatalf("pop returned %d, top was %d", got, top.idx)
			}
			a, b := x.at(top.idx), x.at(last.idx)
			if i > 0 && (a.end < b.end || a.end == b.end && (a.h < b.h || a.h == b.h && top.idx < last.idx)) {
				t.Fatalf("round %d: %+v popped after %+v", round, *a, *b)
			}
			last = top
			if len(h.pages) > h.len()/heapPage+2 {
				t.Fatalf("%d pages for %d items", len(h.pages), h.len())
			}
		}
	}
}

// TestStateLayout: the sizes the Memory section of the package doc and
// spanIndex's count on (a field added to entry, or a uint64 in fpSlot,
// pads them by 8 and 4 bytes a span).
func TestStateLayout(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"entry", unsafe.Sizeof(entry{}), 72},
		{"heapItem", unsafe.Sizeof(heapItem{}), 16},
		{"fpSlot", unsafe.Sizeof(fpSlot{}), 12},
		{"slot", unsafe.Sizeof(slot{}), 40},
	} {
		if c.got > c.want {
			t.Errorf("%s is %d bytes, want at most %d", c.name, c.got, c.want)
		}
	}
}
