package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Siegmund's approximation against the tabulated ARL0 of the one-sided
// CUSUM with k = 0.5, h = 4 (Montgomery, Introduction to Statistical
// Quality Control, table 9.4: 336, the two-sided 168), and its inverse.
func TestSiegmundARL(t *testing.T) {
	if a := SiegmundARL(0.5, 4); math.Abs(a-336)/336 > 0.01 {
		t.Fatalf("ARL0(0.5, 4) = %v, want 336 within 1%%", a)
	}
	h, err := CUSUMThresholdForARL(0.5, 336)
	if err != nil || math.Abs(h-4) > 0.01 {
		t.Fatalf("h for ARL0 336 = %v (%v), want 4", h, err)
	}
	if h, _ := CUSUMThresholdForARL(0.25, 1); h != 0 {
		t.Fatalf("h for ARL0 1 = %v, want 0 (reached at h = 0)", h)
	}
	for _, bad := range [][2]float64{{0, 100}, {0.5, 0}, {math.Inf(1), 10}, {0.5, math.NaN()}} {
		if _, err := CUSUMThresholdForARL(bad[0], bad[1]); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("k=%v arl=%v: %v, want ErrInvalidParameter", bad[0], bad[1], err)
		}
	}
}

// The run length of the one-sided CUSUM of N(0, 1) at k = 0.15 (the
// drift processor's) and h = 12, simulated: its mean within 10% of
// Siegmund's ARL0 (about 750). 2,000 runs, seeded.
func TestSiegmundARLMatchesSimulation(t *testing.T) {
	c := NormalCUSUM{K: 0.15}
	const h = 12.0
	r := rand.New(rand.NewPCG(3, 4))
	var total float64
	const runs = 2000
	for range runs {
		hi, lo, n := 0.0, 0.0, 0
		for hi < h {
			hi, lo = c.Step(hi, lo, r.NormFloat64())
			n++
		}
		_ = lo
		total += float64(n)
	}
	mean, want := total/runs, SiegmundARL(c.K, h)
	if math.Abs(mean-want)/want > 0.1 {
		t.Fatalf("simulated ARL0 %v, Siegmund %v: more than 10%% apart", mean, want)
	}
}

// NormalScore: a value from the reference's own distribution gets a
// score of mean 0 and variance 1 whatever the distribution's shape (here
// a skewed, bounded score, 20,000 draws against 12,000); ties take the
// mid-rank; the scores are bounded by the reference's size.
func TestNormalScore(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	draw := func() float64 { return 1 / (1 + math.Exp(-(1.5 + 0.6*r.NormFloat64()))) }
	ref := make([]float64, 12000)
	for i := range ref {
		ref[i] = draw()
	}
	slices.Sort(ref)
	var s, s2 float64
	const n = 20000
	for range n {
		z := NormalScore(ref, draw())
		s += z
		s2 += z * z
	}
	mean, variance := s/n, s2/n-(s/n)*(s/n)
	if math.Abs(mean) > 0.03 || math.Abs(variance-1) > 0.05 {
		t.Fatalf("scores of in-distribution values: mean %v variance %v, want 0 and 1", mean, variance)
	}
	// Ties: every reference value equal to x: the middle rank, z = 0.
	flat := []float64{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3}
	if z := NormalScore(flat, 2); math.Abs(z) > 1e-12 {
		t.Fatalf("tied value in the middle: z %v, want 0", z)
	}
	if lo, hi := NormalScore(ref, -1), NormalScore(ref, 2); lo >= -3.5 || lo < -4.2 || math.Abs(hi+lo) > 1e-9 {
		t.Fatalf("extremes %v and %v: want ±Φ⁻¹(1 - 1/(2·12001)) ≈ ±3.94", lo, hi)
	}
	if z := NormalScore([]float64{0.5}, 0.4); !(z < 0) || math.IsInf(z, 0) {
		t.Fatalf("one reference value, x below: z %v", z)
	}
}
