package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortedSlopes is every pairwise slope with t_i != t_j, sorted: the
// definition the bracketed selection must reproduce.
func sortedSlopes(t, y []float64) []float64 {
	var s []float64
	for i := range t {
		for j := i + 1; j < len(t); j++ {
			if dx := t[i] - t[j]; dx != 0 {
				s = append(s, (y[i]-y[j])/dx)
			}
		}
	}
	slices.Sort(s)
	return s
}

// theilSenCase draws n points: times on a grid of `grid` values (ties when
// grid < n), values with a trend, noise and, when yTies, rounded to 0.1.
func theilSenCase(rng *rand.Rand, n, grid int, yTies bool) (t, y []float64) {
	slope := rng.NormFloat64()
	for range n {
		x := float64(rng.IntN(grid)) / float64(grid)
		v := slope*x + rng.NormFloat64()*rng.Float64()
		if yTies {
			v = math.Round(v*10) / 10
		}
		t, y = append(t, x), append(y, v)
	}
	return t, y
}

// TestSlopeBracketMatchesSort: the median and bounds selected from the
// bracket equal those of the fully sorted slopes, bit for bit, on series
// with and without ties in t and y, for every rank pair TheilSen asks for at
// levels 0.5 to 0.999; with a tiny sample and no margin the bracket misses
// often, and a miss must say so (ok false), never return a wrong value.
func TestSlopeBracketMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var hits, misses int
	for c := range 60 {
		n := 100 + rng.IntN(300)
		grid := []int{1 << 30, n / 3, 40}[c%3]
		tt, y := theilSenCase(rng, n, grid, c%2 == 0)
		all := sortedSlopes(tt, y)
		nt := len(all)
		for _, level := range []float64{0.5, 0.95, 0.999} {
			z := -math.Sqrt(2) * math.Erfinv(level)
			sigma := math.Sqrt(float64(n) * float64(n-1) * float64(2*n+5) / 18)
			ru := min(int(math.RoundToEven((float64(nt)-z*sigma)/2)), nt-1)
			rl := max(int(math.RoundToEven((float64(nt)+z*sigma)/2))-1, 0)
			k := (nt - 1) / 2
			want := theilSenOrder{median: all[k], low: all[rl], high: all[ru]}
			if nt%2 == 0 {
				want.median = all[k] + 0.5*(all[k+1]-all[k])
			}
			for _, sm := range [][2]int{{slopeSampleSize, slopeSampleMargin}, {16, 0}} {
				got, _, ok := slopeBracket(tt, y, nt, rl, ru, sm[0], sm[1], nil)
				if !ok {
					misses++
					continue
				}
				hits++
				if got != want {
					t.Fatalf("case %d (n %d, %d slopes, level %v, sample %v): got %+v, want %+v", c, n, nt, level, sm, got, want)
				}
				if all := slopeOrderAll(tt, y, nt, rl, ru); all != want {
					t.Fatalf("case %d: slopeOrderAll %+v, want %+v", c, all, want)
				}
			}
		}
	}
	if hits == 0 || misses == 0 {
		t.Fatalf("%d hits and %d misses: both paths must be exercised", hits, misses)
	}
}

// TestSlopeBracketAllEqual: every slope equal (an exact line) puts the
// whole set in the bracket; the answer is that slope.
func TestSlopeBracketAllEqual(t *testing.T) {
	var tt, y []float64
	for i := range 200 {
		tt, y = append(tt, float64(i)), append(y, 3+0.25*float64(i))
	}
	nt := 200 * 199 / 2
	got, _, ok := slopeBracket(tt, y, nt, nt/2-500, nt/2+500, slopeSampleSize, slopeSampleMargin, nil)
	if !ok || got != (theilSenOrder{0.25, 0.25, 0.25}) {
		t.Fatalf("got %+v ok %v, want all 0.25", got, ok)
	}
}

// TestTheilSenBracketedEqualsFull: TheilSen (which brackets above
// slopeBracketMin slopes) against the full selection on the decay
// processor's shape of input (300 points of an hour, slope and noise).
func TestTheilSenBracketedEqualsFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for c := range 20 {
		tt, y := theilSenCase(rng, 300, 1<<30, c%2 == 0)
		got, err := TheilSen(tt, y, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		all := sortedSlopes(tt, y)
		nt := len(all)
		k := (nt - 1) / 2
		med := all[k]
		if nt%2 == 0 {
			med = all[k] + 0.5*(all[k+1]-all[k])
		}
		z := -math.Sqrt(2) * math.Erfinv(0.95)
		_, termT := ties(tt)
		_, termY := ties(y)
		sigma := math.Sqrt((300*299*605 - termT - termY) / 18)
		ru := min(int(math.RoundToEven((float64(nt)-z*sigma)/2)), nt-1)
		rl := max(int(math.RoundToEven((float64(nt)+z*sigma)/2))-1, 0)
		if got.Slope != med || got.Low != all[rl] || got.High != all[ru] {
			t.Fatalf("case %d: %+v, want slope %v, bounds %v and %v", c, got, med, all[rl], all[ru])
		}
	}
}

// TestSlopeBracketInfiniteSlopes: times 1e-300 apart and values of 1e10
// give infinite slopes, which the sign-bit comparisons cannot order: the
// bracket declines (ok false) and TheilSen's full selection answers.
func TestSlopeBracketInfiniteSlopes(t *testing.T) {
	var tt, y []float64
	for i := range 120 {
		tt, y = append(tt, float64(i)*1e-300), append(y, float64(i%7)*1e10)
	}
	nt := 120 * 119 / 2
	if _, _, ok := slopeBracket(tt, y, nt, nt/2-100, nt/2+100, slopeSampleSize, slopeSampleMargin, nil); ok {
		t.Fatal("bracket accepted infinite slopes")
	}
	got, err := TheilSen(tt, y, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	all := sortedSlopes(tt, y)
	k := (nt - 1) / 2
	if want := all[k] + 0.5*(all[k+1]-all[k]); got.Slope != want && !(math.IsNaN(want) && math.IsNaN(got.Slope)) {
		t.Fatalf("slope %v, want %v", got.Slope, want)
	}
}
