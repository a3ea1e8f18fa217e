package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestBernoulliCUSUMWeights(t *testing.T) {
	for _, tc := range []struct {
		p0, p1, wBad, wGood, cross float64
	}{
		// 99.9% target, tuned to a burn rate of 14.4.
		{0.001, 0.0144, math.Log(14.4), math.Log(0.9856 / 0.999), 0.005039},
		{0.01, 0.1, math.Log(10), math.Log(0.9 / 0.99), 0.03974},
	} {
		c, err := NewBernoulliCUSUM(tc.p0, tc.p1)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(c.WBad-tc.wBad) > 1e-12 || math.Abs(c.WGood-tc.wGood) > 1e-12 {
			t.Errorf("p0 %v p1 %v: weights %v %v, want %v %v", tc.p0, tc.p1, c.WBad, c.WGood, tc.wBad, tc.wGood)
		}
		if math.Abs(c.Crossover()-tc.cross) > 1e-5 {
			t.Errorf("p0 %v p1 %v: crossover %v, want %v", tc.p0, tc.p1, c.Crossover(), tc.cross)
		}
	}
}

func TestBernoulliCUSUMStep(t *testing.T) {
	c, _ := NewBernoulliCUSUM(0.001, 0.0144)
	for _, tc := range []struct {
		s, bad, good, want float64
	}{
		{0, 0, 100, 0},                        // floored at 0
		{0, 1, 0, math.Log(14.4)},             // one bad event
		{5, 0, 10, 5 + 10*c.WGood},            // good events pull it down
		{1, 2, 50, 1 + 2*c.WBad + 50*c.WGood}, // a batch
	} {
		if got := c.Step(tc.s, tc.bad, tc.good); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Step(%v, %v, %v) = %v, want %v", tc.s, tc.bad, tc.good, got, tc.want)
		}
	}
}

func TestBernoulliCUSUMErrors(t *testing.T) {
	for _, tc := range [][2]float64{{0, 0.1}, {1, 0.5}, {0.1, 0.1}, {0.1, 0.05}, {0.1, 1}, {math.NaN(), 0.5}} {
		if _, err := NewBernoulliCUSUM(tc[0], tc[1]); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("NewBernoulliCUSUM(%v, %v): %v, want ErrInvalidParameter", tc[0], tc[1], err)
		}
	}
	for _, tc := range [][2]float64{{0, 1}, {1440, 0}, {math.Inf(1), 1}, {-1, 1}} {
		if _, err := ThresholdFor(tc[0], tc[1]); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("ThresholdFor(%v, %v): %v, want ErrInvalidParameter", tc[0], tc[1], err)
		}
	}
}

func TestThresholdFor(t *testing.T) {
	// 1,440 evaluations a day, 1 false alarm per 1,000 days: h = ln(1.44e6).
	h, err := ThresholdFor(1440, 0.001)
	if err != nil || math.Abs(h-14.180) > 1e-3 {
		t.Fatalf("ThresholdFor(1440, 0.001) = %v, %v; want 14.180", h, err)
	}
	if b := FalseAlarmBound(h, 1440); math.Abs(b-0.001) > 1e-12 {
		t.Errorf("FalseAlarmBound(h, 1440) = %v, want 0.001", b)
	}
}

// TestBernoulliCUSUMFalseAlarmBound simulates the in-control walk (batches
// of 100 events at exactly P0) with a low threshold, where alarms are
// frequent enough to count, and checks the episode rate stays under
// E·e^-h, and that the bound is not loose by orders of magnitude.
func TestBernoulliCUSUMFalseAlarmBound(t *testing.T) {
	c, _ := NewBernoulliCUSUM(0.01, 0.1)
	const h, evals, batch = 4.0, 200000, 100
	rng := rand.New(rand.NewPCG(3, 4))
	s, episodes, alarm := 0.0, 0, false
	for range evals {
		bad := 0.0
		for range batch {
			if rng.Float64() < c.P0 {
				bad++
			}
		}
		s = c.Step(s, bad, batch-bad)
		if s >= h && !alarm {
			episodes++
		}
		alarm = s >= h
	}
	bound := FalseAlarmBound(h, evals)
	if float64(episodes) > bound || float64(episodes) < bound/100 {
		t.Errorf("%d alarm episodes in %d evaluations, bound %.0f", episodes, evals, bound)
	}
}
