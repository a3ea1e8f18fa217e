package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// hodgesLehmannBisection is the method selectDifferences replaced, kept as
// its reference: the k-th difference by bisection over the ordered
// float64 values (64 counts of O(n+m)), the (k+1)-th by one more walk.
func hodgesLehmannBisection(xs, ys []float64) float64 {
	countLE := func(t float64) int64 {
		var c int64
		jj := 0
		for _, xv := range xs {
			for jj < len(ys) && xv-ys[jj] > t {
				jj++
			}
			c += int64(len(ys) - jj)
		}
		return c
	}
	total := int64(len(xs)) * int64(len(ys))
	k := (total + 1) / 2
	a, b := orderedBits(xs[0]-ys[len(ys)-1]), orderedBits(xs[len(xs)-1]-ys[0])
	for a < b {
		mid := a + (b-a)/2
		if countLE(fromOrderedBits(mid)) >= k {
			b = mid
		} else {
			a = mid + 1
		}
	}
	lo := fromOrderedBits(a)
	if total%2 == 1 {
		return lo
	}
	var c int64
	next := math.Inf(1)
	jj := 0
	for _, xv := range xs {
		for jj < len(ys) && xv-ys[jj] > lo {
			jj++
		}
		c += int64(len(ys) - jj)
		if jj > 0 {
			next = min(next, xv-ys[jj-1])
		}
	}
	hi := next
	if c > k {
		hi = lo
	}
	return lo + (hi-lo)/2
}

// TestHodgesLehmannMatchesBisection: the selection gives the bisection's
// value bit for bit (the sign of a zero included) on continuous samples,
// heavy ties (values on a grid of 2, 5, 20 and 100 steps, as the
// confidence scores drift compares), a single repeated value, exact
// shifts, negative values and sizes from 1 to a few thousand (the
// selection's gathering and sampling rounds both exercised).
func TestHodgesLehmannMatchesBisection(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	sizes := [][2]int{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {3, 5}, {17, 4}, {40, 90}, {200, 800}, {600, 2400}, {1500, 1400}, {3000, 50}, {5, 4000}}
	for trial := range 400 {
		sz := sizes[trial%len(sizes)]
		grid := []float64{0, 2, 5, 20, 100, 1}[trial/len(sizes)%6]
		draw := func(n int, shift float64) []float64 {
			v := make([]float64, n)
			for i := range v {
				x := r.NormFloat64()*0.2 + 0.6 + shift
				if grid > 0 {
					x = math.Round(x*grid) / grid
				}
				v[i] = x
			}
			slices.Sort(v)
			return v
		}
		shift := []float64{0, 0.05, -0.3}[trial%3]
		xs, ys := draw(sz[0], shift), draw(sz[1], 0)
		if trial%50 == 49 { // one value repeated: every difference tied
			for i := range xs {
				xs[i] = 0.5
			}
			for i := range ys {
				ys[i] = 0.5
			}
		}
		got, err := HodgesLehmannSorted(xs, ys)
		want := hodgesLehmannBisection(xs, ys)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("trial %d (n %d, m %d, grid %v): HL %v (%x, %v), bisection %v (%x)", trial, sz[0], sz[1], grid, got, math.Float64bits(got), err, want, math.Float64bits(want))
		}
	}
}

// TestSelectDifferencesEveryRank: every rank of small samples with ties
// against the sorted list of all differences.
func TestSelectDifferencesEveryRank(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 60 {
		n, m := 1+r.IntN(30), 1+r.IntN(30)
		xs, ys := make([]float64, n), make([]float64, m)
		for i := range xs {
			xs[i] = float64(r.IntN(6)) / 4
		}
		for i := range ys {
			ys[i] = float64(r.IntN(6)) / 4
		}
		if trial%2 == 1 {
			for i := range xs {
				xs[i] += r.Float64()
			}
		}
		slices.Sort(xs)
		slices.Sort(ys)
		var all []float64
		for _, x := range xs {
			for _, y := range ys {
				all = append(all, x-y)
			}
		}
		slices.Sort(all)
		for k := int64(1); k <= int64(len(all)); k++ {
			k2 := min(k+1, int64(len(all)))
			a, b := selectDifferences(xs, ys, k, k2)
			if a != all[k-1] || b != all[k2-1] {
				t.Fatalf("trial %d n %d m %d rank %d: %v %v, want %v %v", trial, n, m, k, a, b, all[k-1], all[k2-1])
			}
		}
	}
}

func TestSelectNth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		v := make([]float64, 1+r.IntN(300))
		for i := range v {
			v[i] = float64(r.IntN(1 + trial%40))
		}
		want := slices.Clone(v)
		slices.Sort(want)
		rk := r.IntN(len(v))
		if got := selectNth(v, rk); got != want[rk] || slices.Min(v[rk:]) != got {
			t.Fatalf("trial %d: rank %d got %v want %v", trial, rk, got, want[rk])
		}
	}
}

func BenchmarkHodgesLehmannBisection2000(b *testing.B) {
	x := lognormalDraws(2000, 0.6, 6)
	y := lognormalDraws(2100, 0.6, 7)
	slices.Sort(x)
	slices.Sort(y)
	for b.Loop() {
		hodgesLehmannBisection(x, y)
	}
}

// orderedBits maps float64 to uint64 preserving order (-0 and +0 adjacent).
func orderedBits(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func fromOrderedBits(u uint64) float64 {
	if u>>63 == 1 {
		return math.Float64frombits(u &^ (1 << 63))
	}
	return math.Float64frombits(^u)
}

func BenchmarkHodgesLehmannSorted2000(b *testing.B) {
	x := lognormalDraws(2000, 0.6, 6)
	y := lognormalDraws(2100, 0.6, 7)
	slices.Sort(x)
	slices.Sort(y)
	for b.Loop() {
		HodgesLehmannSorted(x, y)
	}
}

// TestHodgesLehmannEdges: signed zeros in the input, magnitudes from
// subnormal to 1e300, a case with n·m > 2^32, and the errors through
// HodgesLehmannSorted directly (empty, NaN, Inf, differences that
// overflow: the selection spun on those, the bisection gave NaN).
func TestHodgesLehmannEdges(t *testing.T) {
	neg0 := math.Copysign(0, -1)
	cases := [][2][]float64{
		{{neg0}, {0}},
		{{0}, {neg0}},
		{{neg0, 0, 0, 1}, {0, neg0, 0}},
		{{neg0, neg0, 0}, {neg0, 0}},
		{{-1, neg0, 0, 1}, {neg0, 0}},
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, scale := range []float64{5e-324, 1e-310, 1e-300, 1e-20, 1, 1e20, 1e300} {
		for _, sz := range [][2]int{{7, 9}, {300, 40}, {40, 300}} {
			var c [2][]float64
			for s := range 2 {
				c[s] = make([]float64, sz[s])
				for i := range c[s] {
					c[s][i] = math.Round(r.NormFloat64()*4) * scale
				}
				slices.Sort(c[s])
			}
			cases = append(cases, c)
		}
	}
	for i, c := range cases {
		got, err := HodgesLehmannSorted(c[0], c[1])
		want := hodgesLehmannBisection(c[0], c[1])
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("case %d: %v (%x, %v), bisection %v (%x)", i, got, math.Float64bits(got), err, want, math.Float64bits(want))
		}
	}
	// n·m > 2^32: 70,000 x 70,000 on a grid of 5.
	big := func(seed uint64) []float64 {
		rr := rand.New(rand.NewPCG(seed, 1))
		v := make([]float64, 70000)
		for i := range v {
			v[i] = math.Round((rr.NormFloat64()*0.2+0.6)*5) / 5
		}
		slices.Sort(v)
		return v
	}
	bx, by := big(1), big(2)
	if got, want := must(HodgesLehmannSorted(bx, by)), hodgesLehmannBisection(bx, by); math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("70,000 x 70,000: %v, bisection %v", got, want)
	}
	huge := math.MaxFloat64
	for _, c := range [][2][]float64{
		{nil, {1}}, {{1}, nil}, {{math.NaN()}, {1}}, {{1}, {math.Inf(1)}},
		{{-huge, -huge}, {huge, huge, huge}}, {{-huge}, {huge, huge, huge, huge}},
		{{huge, huge, huge}, {-huge}}, {{huge, huge}, {-huge, -huge}},
	} {
		if _, err := HodgesLehmannSorted(c[0], c[1]); err == nil {
			t.Fatalf("%v vs %v: no error", c[0], c[1])
		}
	}
}

func must(v float64, err error) float64 {
	if err != nil {
		panic(err)
	}
	return v
}

// TestHodgesLehmannAllocatesNothing: with the scratch pool warm, a
// canary-sized call allocates nothing.
func TestHodgesLehmannAllocatesNothing(t *testing.T) {
	x, y := lognormalDraws(1200, 0.07, 1), lognormalDraws(4800, 0.07, 2)
	slices.Sort(x)
	slices.Sort(y)
	HodgesLehmannSorted(x, y)
	if a := testing.AllocsPerRun(20, func() { HodgesLehmannSorted(x, y) }); a > 0.5 {
		t.Fatalf("%v allocations per call", a)
	}
}
