package window

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestCollectUniformWithoutOverflowKeepsAll(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	s, _ := New(1000, 1000)
	for _, x := range samples(r, 3000, 5000) {
		s.Add(x)
	}
	all, n := s.Collect(0, 5000, nil)
	got, m, rate := s.CollectUniform(0, 5000, nil)
	slices.SortFunc(got, CompareSamples) // CollectUniform does not sort
	if rate != 1 || m != n || !slices.Equal(got, all) {
		t.Fatalf("rate %v n %d (Collect %d), equal %v; want everything at rate 1", rate, m, n, slices.Equal(got, all))
	}
}

// One busy slot over its cap and quiet ones under it: the pooled sample is
// exactly the window's samples with hash <= the busy slot's largest kept
// hash, whatever the arrival order, at rate limit/2^64.
func TestCollectUniformThinsToTheBusiestSlot(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var xs []Sample
	for i, per := range []int{2000, 50, 50, 80, 30} { // slot 0 is busy
		for range per {
			xs = append(xs, Sample{T: int64(i)*1000 + r.Int64N(1000), V: r.NormFloat64(), H: r.Uint64()})
		}
	}
	run := func(order []Sample) ([]Sample, int64, float64) {
		s, _ := New(1000, 100)
		for _, x := range order {
			s.Add(x)
		}
		kept, n, rate := s.CollectUniform(0, 5000, nil)
		slices.SortFunc(kept, CompareSamples) // a set: compare it sorted
		return kept, n, rate
	}
	kept, n, rate := run(xs)
	if n != int64(len(xs)) {
		t.Fatalf("n %d, want %d", n, len(xs))
	}
	var busy []uint64
	for _, x := range xs[:2000] {
		busy = append(busy, x.H)
	}
	slices.Sort(busy)
	limit := busy[99] // the largest of the 100 smallest hashes
	var want []Sample
	for _, x := range xs {
		if x.H <= limit {
			want = append(want, x)
		}
	}
	slices.SortFunc(want, CompareSamples)
	if !slices.Equal(kept, want) {
		t.Fatalf("kept %d samples, want the %d with hash <= %x", len(kept), len(want), limit)
	}
	if rate != math.Ldexp(float64(limit), -64) {
		t.Fatalf("rate %v, want %v", rate, math.Ldexp(float64(limit), -64))
	}
	shuffled := slices.Clone(xs)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if k2, n2, r2 := run(shuffled); !slices.Equal(k2, kept) || n2 != n || r2 != rate {
		t.Fatal("the set of uniform samples depends on arrival order")
	}
	// A window that leaves the busy slot out is not thinned.
	s, _ := New(1000, 100)
	for _, x := range xs {
		s.Add(x)
	}
	if _, _, r := s.CollectUniform(1000, 5000, nil); r != 1 {
		t.Fatalf("rate %v without the busy slot, want 1", r)
	}
}

func TestPoolRecyclesEvictedArrays(t *testing.T) {
	var pool Pool
	s, _ := New(1000, 64)
	x := Sample{V: 1}
	addSlot := func(start int64) {
		for i := range 100 { // over the cap: the array reaches cap 64
			x.T, x.H = start+int64(i), uint64(i)
			pool.Add(s, x)
		}
	}
	for start := int64(0); start < 5000; start += 1000 {
		addSlot(start)
	}
	ref, _ := New(1000, 64)
	for _, sl := range s.Slots {
		for _, y := range sl.Samples {
			ref.Add(y)
		}
	}
	got, _ := s.Collect(0, 5000, nil)
	want, _ := ref.Collect(0, 5000, nil)
	if !slices.Equal(got, want) {
		t.Fatal("Pool.Add keeps other samples than Store.Add")
	}
	next := int64(5000)
	allocs := testing.AllocsPerRun(50, func() {
		pool.EvictBefore(s, next-4000)
		addSlot(next)
		next += 1000
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per evicted-and-added slot, want 0", allocs)
	}
	if len(s.Slots) != 5 || len(pool.free) > MaxPooled {
		t.Fatalf("%d slots, %d pooled arrays", len(s.Slots), len(pool.free))
	}
}

// TestArraysFitTheirKeys: a new slot's array is sized from the key's
// previous slot, and a pool shared by a busy key and a small one gives
// each arrays of about its own size (not the busy key's to every key).
func TestArraysFitTheirKeys(t *testing.T) {
	var pool Pool
	busy, _ := New(1000, 20000)
	small, _ := New(1000, 20000)
	fill := func(s *Store, start int64, n int) {
		for i := range n {
			pool.Add(s, Sample{T: start + int64(i)%1000, V: float64(i), H: uint64(i)})
		}
	}
	for start := int64(0); start < 20000; start += 1000 {
		pool.EvictBefore(busy, start-4000)
		pool.EvictBefore(small, start-4000)
		fill(busy, start, 600)
		fill(small, start, 10)
	}
	for _, sl := range busy.Slots[1:] {
		if c := cap(sl.Samples); c > 600+600/8+4 {
			t.Errorf("busy key's slot at %d: capacity %d for 600 samples a slot", sl.Start, c)
		}
	}
	for _, s := range []*Store{busy, small} {
		if n, c := len(s.Slots), cap(s.Slots); c > n+2 {
			t.Errorf("%d slots in an array of %d", n, c)
		}
	}
	for i, sl := range small.Slots {
		// Sealed slots (every one but the newest) fit their samples; the
		// newest grows by append.
		limit := 10 + 2
		if i == len(small.Slots)-1 {
			limit = 2*10 + 4
		}
		if c := cap(sl.Samples); c > limit {
			t.Errorf("small key's slot at %d: capacity %d for 10 samples a slot", sl.Start, c)
		}
	}
}

// TestSealedSlotTakesLateSamples: a sample arriving for a slot after a
// newer one started (late, within the allowed lateness) is kept, the
// sealed array grows by an eighth rather than doubling, and the window
// holds what a store filled in time order holds.
func TestSealedSlotTakesLateSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := samples(r, 400, 4000) // ~100 a slot of 1000
	var pool Pool
	late, _ := New(1000, 1000)
	ordered, _ := New(1000, 1000)
	slices.SortFunc(xs, CompareSamples)
	for _, x := range xs {
		ordered.Add(x)
	}
	// The samples of the first 0.3 of each slot after the first arrive after the
	// next slot started: each is late into a sealed slot.
	var held []Sample
	for _, x := range xs {
		if x.T%1000 < 300 && x.T >= 1000 {
			held = append(held, x)
			continue
		}
		pool.Add(late, x)
	}
	for _, x := range held {
		n := len(late.Slots)
		pool.Add(late, x)
		if len(late.Slots) != n {
			t.Fatalf("a late sample at %d opened a slot", x.T)
		}
	}
	got, ng := late.Collect(0, 4000, nil)
	want, nw := ordered.Collect(0, 4000, nil)
	if ng != nw || !slices.Equal(got, want) {
		t.Fatalf("late samples: %d kept of %d, want %d of %d, equal=%v", len(got), ng, len(want), nw, slices.Equal(got, want))
	}
	for _, sl := range late.Slots[:len(late.Slots)-1] {
		if k, c := len(sl.Samples), cap(sl.Samples); c > k+k/8+2+k/4 {
			t.Errorf("slot at %d: capacity %d for %d samples after late ones", sl.Start, c, k)
		}
	}
}
