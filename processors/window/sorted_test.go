package window

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedRangeMatchesSort slides a 60-slot reference window and a
// 5-slot current window over a store fed and evicted as the drift
// processor feeds it, with late additions to cached slots now and then,
// and checks every result against sorting CollectUniform's values.
func TestSortedRangeMatchesSort(t *testing.T) {
	const w = int64(60)
	rng := rand.New(rand.NewPCG(1, 2))
	st := &Store{SlotWidth: w, Cap: 2000}
	var ref, cur SortedRange
	var buf []Sample
	updates := 0
	for now := int64(0); now < 400*w; now += w {
		for range rng.IntN(40) {
			// Ties on purpose: values on a grid of 0.01.
			st.Add(Sample{T: now - w + rng.Int64N(w), V: float64(rng.IntN(100)) / 100, H: rng.Uint64()})
		}
		if rng.IntN(10) == 0 && now > 20*w {
			// A record added to an older, already cached slot.
			st.Add(Sample{T: now - 10*w, V: 0.5, H: rng.Uint64()})
		}
		for _, c := range []struct {
			sr       *SortedRange
			from, to int64
		}{{&ref, now - 65*w, now - 5*w}, {&cur, now - 5*w, now}} {
			got, ok := c.sr.Values(st, c.from, c.to)
			if !ok {
				t.Fatalf("now %d: not served with no capped slot", now)
			}
			buf, _, _ = st.CollectUniform(c.from, c.to, buf)
			want := make([]float64, 0, len(buf))
			for _, x := range buf {
				want = append(want, x.V)
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("now %d [%d, %d): %d values, want %d (sorted CollectUniform)", now, c.from, c.to, len(got), len(want))
			}
		}
		if ref.valid {
			updates++
		}
		st.EvictBefore(now + w - 65*w)
	}
	if updates == 0 {
		t.Fatal("cache never used")
	}
}

// TestSortedRangeCappedSlot: a slot over its cap makes the uniform sample
// depend on hashes, so Values declines and the caller uses CollectUniform.
func TestSortedRangeCappedSlot(t *testing.T) {
	st := &Store{SlotWidth: 10, Cap: 2}
	for i := range 3 {
		st.Add(Sample{T: int64(i), V: float64(i), H: uint64(i)})
	}
	var c SortedRange
	if _, ok := c.Values(st, 0, 10); ok {
		t.Fatal("served a capped slot")
	}
	if vs, ok := c.Values(st, 10, 20); !ok || len(vs) != 0 {
		t.Fatalf("empty range: %v %v", vs, ok)
	}
}

// mergeMinus (the merge before mergeMinusInPlace) appends to dst the sorted multiset a − rm + add (all three
// sorted; rm a sub-multiset of a) in one pass.
func mergeMinus(dst, a, rm, add []float64) []float64 {
	i, r, j := 0, 0, 0
	for i < len(a) {
		if r < len(rm) && a[i] == rm[r] {
			i++
			r++
			continue
		}
		if j < len(add) && add[j] < a[i] {
			dst = append(dst, add[j])
			j++
			continue
		}
		dst = append(dst, a[i])
		i++
	}
	return append(dst, add[j:]...)
}

// TestMergeMinusInPlaceIsMergeMinus: the in-place merge gives mergeMinus's
// elements in its order, bit for bit (ties, zeros of both signs, repeats),
// on 2,000 random cases of up to 300 values, the array without spare
// capacity (grown when more values enter than leave).
func TestMergeMinusInPlaceIsMergeMinus(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 5))
	pick := []float64{math.Copysign(0, -1), 0, 1, 1.5, 2, 3, -4}
	for c := range 2000 {
		var a, rm, add []float64
		for range r.IntN(300) {
			a = append(a, pick[r.IntN(len(pick))])
		}
		slices.Sort(a)
		for _, x := range a {
			if r.IntN(3) == 0 {
				rm = append(rm, x)
			}
		}
		for range r.IntN(300) {
			add = append(add, pick[r.IntN(len(pick))])
		}
		slices.Sort(add)
		want := mergeMinus(nil, a, rm, add)
		in := slices.Clone(a)
		got := mergeMinusInPlace(in[:len(in):len(in)], rm, add) // no spare capacity: Grow reallocates
		if len(got) != len(want) {
			t.Fatalf("case %d: %d values, want %d", c, len(got), len(want))
		}
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("case %d: %v, want %v", c, got, want)
			}
		}
	}
}
