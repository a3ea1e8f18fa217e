package drift

import (
	"math"
	"slices"
	"testing"

	"github.com/fusebox-dev/fusebox/stats"
)

// TestKSArgMaxAttainsD checks that the evidence's KSAt is where the KS
// distance is attained: |F_x(at) − F_y(at)| equals stats' D.
func TestKSArgMaxAttainsD(t *testing.T) {
	ecdf := func(s []float64, x float64) float64 {
		n := 0
		for _, v := range s {
			if v <= x {
				n++
			}
		}
		return float64(n) / float64(len(s))
	}
	cases := [][2][]float64{
		{{1, 2, 3, 4}, {3, 4, 5, 6, 7}},
		{{0.5, 0.5, 0.5, 0.9}, {0.1, 0.5, 0.5}},
		{{1}, {2}},
		{{5, 6, 7}, {1, 2, 3, 8, 9}},
	}
	for i := 0; i < 200; i++ {
		u := math.Mod(float64(i+1)*0.6180339887498949, 1)
		if i%2 == 0 {
			cases[0][0] = append(cases[0][0], u)
		} else {
			cases[0][1] = append(cases[0][1], u*u)
		}
	}
	for i, c := range cases {
		xs, ys := append([]float64(nil), c[0]...), append([]float64(nil), c[1]...)
		slices.Sort(xs)
		slices.Sort(ys)
		d := stats.KSStatisticSorted(xs, ys)
		at := ksArgMax(xs, ys)
		if got := math.Abs(ecdf(xs, at) - ecdf(ys, at)); math.Abs(got-d) > 1e-12 {
			t.Errorf("case %d: at %v the distance is %v, want D = %v", i, at, got, d)
		}
	}
}
