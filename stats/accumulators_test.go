package stats

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func TestEntropy(t *testing.T) {
	h, norm, err := Entropy([]float64{1, 1, 1, 1, 0, 0})
	if err != nil || h != 2 || norm != 1 {
		t.Errorf("uniform over 4: %v %v %v", h, norm, err)
	}
	if h, norm, err := Entropy([]float64{0, 7, 0}); err != nil || h != 0 || norm != 0 {
		t.Errorf("one category: %v %v %v", h, norm, err)
	}
	for _, c := range [][]float64{nil, {0, 0}} {
		if _, _, err := Entropy(c); !errors.Is(err, ErrTooFewSamples) {
			t.Errorf("%v: %v", c, err)
		}
	}
	if _, _, err := Entropy([]float64{1, -1}); !errors.Is(err, ErrInvalidInput) {
		t.Error(err)
	}
}

func TestWelford(t *testing.T) {
	x := lognormalDraws(1001, 0.8, 71)
	for i := range x {
		x[i] += 1e6 // a large offset: the naive sum-of-squares would cancel
	}
	var all Welford
	for _, v := range x {
		all.Add(v)
	}
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	v, ok := all.Variance()
	if !ok || math.Abs(all.Mean-m) > 1e-9 || math.Abs(v/(ss/1000)-1) > 1e-9 {
		t.Errorf("Welford %+v var %v, two-pass mean %v var %v", all, v, m, ss/1000)
	}
	// Merging partitions equals one pass.
	var a, b, c Welford
	for i, v := range x {
		switch i % 3 {
		case 0:
			a.Add(v)
		case 1:
			b.Add(v)
		default:
			c.Add(v)
		}
	}
	a.Merge(b)
	a.Merge(c)
	a.Merge(Welford{})
	va, _ := a.Variance()
	if a.N != all.N || math.Abs(a.Mean-all.Mean) > 1e-9 || math.Abs(va/v-1) > 1e-9 {
		t.Errorf("merged %+v, sequential %+v", a, all)
	}
	// The exported fields are the state: a JSON round trip restores it.
	raw, _ := json.Marshal(all)
	var back Welford
	if err := json.Unmarshal(raw, &back); err != nil || back != all {
		t.Errorf("round trip %+v -> %+v (%v)", all, back, err)
	}
	var one Welford
	if one.Add(math.NaN()) || one.N != 0 {
		t.Error("NaN accepted")
	}
	one.Add(3)
	if _, ok := one.Variance(); ok {
		t.Error("variance of one value reported ok")
	}
	if pv, ok := one.PopulationVariance(); !ok || pv != 0 {
		t.Error("population variance of one value")
	}
}

func TestWilsonAndTwoProportion(t *testing.T) {
	lo, hi, err := Wilson(10, 10, 0.95)
	if err != nil || hi != 1 || !(lo > 0.6 && lo < 0.8) {
		t.Errorf("k=n: [%v, %v] %v", lo, hi, err)
	}
	for _, c := range [][2]int64{{-1, 10}, {11, 10}, {0, 0}} {
		if _, _, err := Wilson(c[0], c[1], 0.95); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("Wilson%v: %v", c, err)
		}
	}
	if _, _, err := Wilson(1, 10, 1); !errors.Is(err, ErrInvalidParameter) {
		t.Error(err)
	}
	// 45/100 vs 30/100: pooled 0.375, z = 0.15/sqrt(0.375*0.625*0.02).
	r, err := TwoProportionZ(45, 100, 30, 100)
	z := 0.15 / math.Sqrt(0.375*0.625*0.02)
	if err != nil || math.Abs(r.Z-z) > 1e-12 || math.Abs(r.P-math.Erfc(z/math.Sqrt2)) > 1e-15 || math.Abs(r.Diff-0.15) > 1e-15 {
		t.Errorf("%+v %v (z %v)", r, err, z)
	}
	if _, err := TwoProportionZ(0, 50, 0, 60); !errors.Is(err, ErrDegenerate) {
		t.Error(err)
	}
	if _, err := TwoProportionZ(5, 4, 1, 10); !errors.Is(err, ErrInvalidInput) {
		t.Error(err)
	}
}
