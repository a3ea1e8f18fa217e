package stats

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestMannWhitneyProperties(t *testing.T) {
	x := lognormalDraws(40, 0.6, 41)
	y := lognormalDraws(55, 0.6, 42)
	for i := range x {
		x[i] = math.Round(x[i] * 4) // ties within and across samples
	}
	for i := range y {
		y[i] = math.Round(y[i]*4) + 1
	}
	a, err := MannWhitneyU(x, y)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := MannWhitneyU(y, x)
	if a.U+b.U != 40*55 || math.Abs(a.P-b.P) > 1e-15 || math.Abs(a.Z+b.Z) > 1e-12 {
		t.Errorf("U(x,y)=%+v U(y,x)=%+v", a, b)
	}
	// U counts pairs x > y, ties 1/2.
	u := 0.0
	for _, xv := range x {
		for _, yv := range y {
			switch {
			case xv > yv:
				u++
			case xv == yv:
				u += 0.5
			}
		}
	}
	if a.U != u {
		t.Errorf("U = %v, pair count %v", a.U, u)
	}
	if a.P < 0 || a.P > 1 || !(a.Z < 0) {
		t.Errorf("%+v", a)
	}
	if _, err := MannWhitneyU([]float64{3, 3}, []float64{3, 3, 3}); !errors.Is(err, ErrDegenerate) {
		t.Errorf("all tied: %v", err)
	}
	if _, err := MannWhitneyU(nil, y); !errors.Is(err, ErrTooFewSamples) {
		t.Error(err)
	}
	if _, err := MannWhitneyU([]float64{math.NaN()}, y); !errors.Is(err, ErrInvalidInput) {
		t.Error(err)
	}
	if _, err := MannWhitneyU(y, []float64{2, math.NaN()}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("NaN in y: %v", err)
	}
	// Infinite values rank like any other: +Inf above everything.
	if r, err := MannWhitneyU([]float64{math.Inf(1), 1}, []float64{0, math.Inf(-1), 1}); err != nil || r.U != 5.5 {
		t.Errorf("infinities: %+v %v, want U 5.5", r, err)
	}
}

func TestHodgesLehmannMatchesBruteForce(t *testing.T) {
	for i, c := range []struct{ n, m int }{{1, 1}, {3, 4}, {10, 7}, {25, 30}, {60, 41}} {
		x := lognormalDraws(c.n, 1, uint64(50+i))
		y := lognormalDraws(c.m, 1, uint64(60+i))
		if i%2 == 1 {
			for j := range x {
				x[j] = math.Round(x[j] * 2) // ties
			}
			for j := range y {
				y[j] = math.Round(y[j] * 2)
			}
		}
		var diffs []float64
		for _, xv := range x {
			for _, yv := range y {
				diffs = append(diffs, xv-yv)
			}
		}
		slices.Sort(diffs)
		want, _ := Quantile(diffs, 0.5)
		got, err := HodgesLehmann(x, y)
		if err != nil || math.Abs(got-want) > 1e-15*math.Max(1, math.Abs(want)) {
			t.Errorf("case %d: HL %v (%v), brute force %v", i, got, err, want)
		}
	}
	// A pure shift is recovered exactly.
	x := []float64{1, 2, 3, 4, 5}
	y := []float64{-1, 0, 1, 2, 3}
	if got, _ := HodgesLehmann(x, y); got != 2 {
		t.Errorf("shift: %v, want 2", got)
	}
	if _, err := HodgesLehmann(nil, y); !errors.Is(err, ErrTooFewSamples) {
		t.Error(err)
	}
	if _, err := HodgesLehmann([]float64{math.Inf(1)}, y); !errors.Is(err, ErrInvalidInput) {
		t.Error(err)
	}
}
