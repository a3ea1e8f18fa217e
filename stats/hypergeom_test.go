package stats

import (
	"errors"
	"math"
	"testing"
)

// The reference values are exact: sum_{i>=k} C(K,i) C(N-K,n-i) / C(N,n)
// computed in rational arithmetic (Python's fractions and math.comb) and
// rounded to float64 once.
func TestHypergeomUpperTailExact(t *testing.T) {
	for _, c := range []struct {
		k, N, K, n int64
		want       float64
	}{
		{8, 40, 8, 8, 1.3003108978341176e-08}, // every breaching key is one model's
		{2, 40, 2, 8, 0.035897435897435895},
		{3, 40, 3, 8, 0.005668016194331984},
		{1, 40, 1, 1, 0.025}, // one key alone: 1/N
		{5, 60, 9, 10, 0.004214317715310474},
		{29, 400, 29, 40, 2.0063989545431435e-35}, // the slow model: 29 keys
		{3, 10, 4, 5, 0.2619047619047619},
		{10, 1000, 30, 50, 5.519344217682654e-07},
		{2, 6, 3, 3, 0.5},
	} {
		got, err := HypergeomUpperTail(c.k, c.N, c.K, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("P[X>=%d; N=%d K=%d n=%d] = %.17g, want %.17g", c.k, c.N, c.K, c.n, got, c.want)
		}
	}
}

func TestHypergeomUpperTailEdges(t *testing.T) {
	for _, c := range []struct {
		k, N, K, n int64
		want       float64
	}{
		{0, 10, 3, 4, 1},  // k = 0: certain
		{-2, 10, 3, 4, 1}, // below the support
		{5, 10, 3, 4, 0},  // more than K marked
		{4, 10, 3, 4, 0},  // k > min(n, K)
		{3, 5, 4, 4, 1},   // n+K-N = 3: every draw has 3 marked
		{0, 0, 0, 0, 1},   // empty population
		{1, 10, 0, 4, 0},  // nothing marked
		{1, 10, 3, 0, 0},  // nothing drawn
	} {
		got, err := HypergeomUpperTail(c.k, c.N, c.K, c.n)
		if err != nil || got != c.want {
			t.Errorf("P[X>=%d; N=%d K=%d n=%d] = %v, %v; want %v", c.k, c.N, c.K, c.n, got, err, c.want)
		}
	}
	for _, c := range [][4]int64{{1, -1, 0, 0}, {1, 5, 6, 1}, {1, 5, 1, 6}, {1, 5, -1, 1}} {
		if _, err := HypergeomUpperTail(c[0], c[1], c[2], c[3]); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%v: err %v, want ErrInvalidInput", c, err)
		}
	}
	// The tail sums to 1 with the complement, over the whole support.
	var N, K, n int64 = 50, 12, 20
	for k := int64(0); k <= 12; k++ {
		up, _ := HypergeomUpperTail(k, N, K, n)
		// P[X <= k-1] of the marked is P[X' >= n-k+1] of the unmarked.
		down, _ := HypergeomUpperTail(n-k+1, N, N-K, n)
		if math.Abs(up+down-1) > 1e-12 {
			t.Errorf("k=%d: P[X>=k] %v + P[X<k] %v != 1", k, up, down)
		}
	}
}

func TestHolm(t *testing.T) {
	// Hand-checked: sorted 0.01, 0.02, 0.03, 0.5 times 4, 3, 2, 1 is
	// 0.04, 0.06, 0.06 (the running max), 0.5.
	got, err := Holm([]float64{0.03, 0.5, 0.01, 0.02})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.06, 0.5, 0.04, 0.06}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("Holm[%d] = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	// Capped at 1; ties keep their order; empty is empty.
	got, _ = Holm([]float64{0.4, 0.4, 0.9})
	if got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Errorf("Holm of large p-values = %v, want all 1", got)
	}
	if got, err := Holm(nil); err != nil || len(got) != 0 {
		t.Errorf("Holm(nil) = %v, %v", got, err)
	}
	for _, bad := range []float64{math.NaN(), -0.1, 1.5} {
		if _, err := Holm([]float64{0.1, bad}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("Holm with %v: err %v, want ErrInvalidInput", bad, err)
		}
	}
}
