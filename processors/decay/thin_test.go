package decay

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fusebox-dev/fusebox/processors/window"
)

// TestSelectSmallestMatchesSort: the k smallest by (H, T, V) that thinning
// keeps are the first k of a full sort, for every k, with ties in H.
func TestSelectSmallestMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	byH := func(a, b window.Sample) int {
		if c := cmp.Compare(a.H, b.H); c != 0 {
			return c
		}
		return window.CompareSamples(a, b)
	}
	for trial := range 200 {
		n := 1 + rng.IntN(300)
		xs := make([]window.Sample, n)
		for i := range xs {
			xs[i] = window.Sample{T: rng.Int64N(50), V: float64(rng.IntN(5)), H: rng.Uint64N(40)}
		}
		want := slices.Clone(xs)
		slices.SortFunc(want, byH)
		k := 1 + rng.IntN(n)
		got := slices.Clone(xs)
		selectSmallest(got, k, byH)
		got = got[:k]
		slices.SortFunc(got, byH)
		if !slices.Equal(got, want[:k]) {
			t.Fatalf("trial %d n %d k %d: selection differs from the sort", trial, n, k)
		}
	}
}
