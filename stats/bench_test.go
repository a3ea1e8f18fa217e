package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gpdSample draws n GPD(xi, sigma) variates with a seeded generator.
func gpdDraws(n int, xi, sigma float64, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	x := make([]float64, n)
	for i := range x {
		u := 1 - r.Float64() // (0, 1]
		if xi == 0 {
			x[i] = -sigma * math.Log(u)
		} else {
			x[i] = sigma / xi * math.Expm1(-xi*math.Log(u))
		}
	}
	return x
}

// lognormalDraws draws n exp(s*Z) variates.
func lognormalDraws(n int, s float64, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Exp(s * r.NormFloat64())
	}
	return x
}

// BenchmarkBaselineLogPass1000 is the unit of work of the GPD code: one
// pass of log(1+u) and a division over 1,000 values. Other benchmarks are
// reported as multiples of it, which is stable on a loaded machine.
func BenchmarkBaselineLogPass1000(b *testing.B) {
	x := gpdDraws(1000, 0.2, 1, 1)
	var sink float64
	for b.Loop() {
		var s, s1 float64
		for _, v := range x {
			u := 0.3 * v
			s += math.Log(1 + u)
			s1 += v / (1 + u)
		}
		sink += s + s1
	}
	if math.IsNaN(sink) {
		b.Fatal("NaN")
	}
}

// BenchmarkBaselineSort1000 sorts 1,000 floats (the other unit: a refit
// that re-sorted would pay this).
func BenchmarkBaselineSort1000(b *testing.B) {
	x := gpdDraws(1000, 0.2, 1, 1)
	y := make([]float64, len(x))
	for b.Loop() {
		copy(y, x)
		slices.Sort(y)
	}
}

func BenchmarkFitGPD1000(b *testing.B) {
	exc := gpdDraws(1000, 0.2, 40, 1)
	var f GPDFitter
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Fit(exc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFitGPD1000Sorted(b *testing.B) {
	exc := gpdDraws(1000, 0.2, 40, 1)
	slices.Sort(exc)
	var f GPDFitter
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Fit(exc); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTail: a window of 20,000 latencies, u = P95 (1,000 exceedances).
func benchTail(b *testing.B, m IntervalMethod) {
	values := lognormalDraws(20000, 0.6, 2)
	cfg := DefaultTailConfig()
	cfg.Interval = m
	var e TailEstimator
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Estimate(values, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTailEstimate20000Profile(b *testing.B) { benchTail(b, IntervalProfile) }
func BenchmarkTailEstimate20000Delta(b *testing.B)   { benchTail(b, IntervalDelta) }

// BenchmarkTailEstimateTop1000 is the refit from the largest values kept
// sorted: 1,000 exceedances of a 20,000-value window, profile CI.
func BenchmarkTailEstimateTop1000(b *testing.B) {
	values := lognormalDraws(20000, 0.6, 2)
	s := largest(values, 2*TailSize(len(values), 0.95))
	cfg := DefaultTailConfig()
	var e TailEstimator
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.EstimateTop(s.Top(), len(values), cfg); err != nil {
			b.Fatal(err)
		}
	}
}

func benchKS(b *testing.B, n, m int, method KSMethod) {
	x := lognormalDraws(n, 0.6, 3)
	y := lognormalDraws(m, 0.65, 4)
	slices.Sort(x)
	slices.Sort(y)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := KS2SampSorted(x, y, method); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKS10000x10000Auto(b *testing.B) { benchKS(b, 10000, 10000, KSAuto) }
func BenchmarkKS10000x9000Auto(b *testing.B)  { benchKS(b, 10000, 9000, KSAuto) }
func BenchmarkKS10000x9999Auto(b *testing.B)  { benchKS(b, 10000, 9999, KSAuto) }
func BenchmarkKS20000x20000Auto(b *testing.B) { benchKS(b, 20000, 20000, KSAuto) }

func BenchmarkMannWhitney2000(b *testing.B) {
	x := lognormalDraws(2000, 0.6, 6)
	y := lognormalDraws(2100, 0.6, 7)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MannWhitneyU(x, y); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHodgesLehmann2000(b *testing.B) {
	x := lognormalDraws(2000, 0.6, 6)
	y := lognormalDraws(2100, 0.6, 7)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := HodgesLehmann(x, y); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTheilSen1440(b *testing.B) { benchTheilSen(b, 1440) }

// BenchmarkTheilSen300: the decay processor's default cap
// (theil_sen_max_points), 44,850 slopes.
func BenchmarkTheilSen300(b *testing.B) { benchTheilSen(b, 300) }

func benchTheilSen(b *testing.B, n int) {
	t := make([]float64, n)
	y := lognormalDraws(n, 0.1, 8)
	for i := range t {
		t[i] = float64(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TheilSen(t, y, 0.95); err != nil {
			b.Fatal(err)
		}
	}
}
