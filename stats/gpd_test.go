package stats

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestFitGPDRecoversParameters(t *testing.T) {
	const n, sigma = 20000, 2.0
	for i, xi := range []float64{-0.5, -0.25, 0, 0.25, 0.5, 1} {
		exc := gpdDraws(n, xi, sigma, uint64(100+i))
		fit, err := FitGPD(exc)
		if err != nil {
			t.Fatalf("xi=%v: %v", xi, err)
		}
		// Asymptotic sd of xi-hat is (1+xi)/sqrt(n); of sigma-hat/sigma
		// sqrt(2(1+xi)/n). Allow 4 sd.
		if d := math.Abs(fit.Xi - xi); d > 4*(1+xi)/math.Sqrt(n) {
			t.Errorf("xi=%v: fitted %v", xi, fit.Xi)
		}
		if d := math.Abs(fit.Sigma/sigma - 1); d > 4*math.Sqrt(2*(1+xi)/n) {
			t.Errorf("xi=%v: sigma fitted %v, want %v", xi, fit.Sigma, sigma)
		}
		if fit.N != n {
			t.Errorf("N = %d", fit.N)
		}
	}
}

// TestFitGPDBeatsNelderMead checks the "best log-likelihood" claim
// independently: a Nelder–Mead search in (xi, log sigma) from several
// starts must not find a better point than FitGPD (within 1e-7 relative).
func TestFitGPDBeatsNelderMead(t *testing.T) {
	for i := 0; i < 60; i++ {
		xi := -0.5 + 1.5*float64(i%6)/5 // -0.5 .. 1
		n := []int{20, 30, 50, 100, 400}[i%5]
		exc := gpdDraws(n, xi, 3, uint64(1000+i))
		fit, err := FitGPD(exc)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		mean := 0.0
		for _, v := range exc {
			mean += v / float64(n)
		}
		best := math.Inf(-1)
		for _, x0 := range [][]float64{{-0.4, math.Log(mean * 1.4)}, {0, math.Log(mean)}, {0.5, math.Log(mean * 0.5)}, {0.9, math.Log(mean * 0.2)}} {
			f := func(x [2]float64) float64 {
				if x[0] < -1 {
					return math.Inf(1) // the likelihood is unbounded there
				}
				ll := gpdLogLik(exc, x[0], math.Exp(x[1]))
				if math.IsNaN(ll) || math.IsInf(ll, 0) {
					return math.Inf(1)
				}
				return -ll
			}
			best = max(best, -nelderMead(f, [2]float64{x0[0], x0[1]}, 4000))
		}
		if fit.LogLik < best-1e-7*math.Abs(best) {
			t.Errorf("case %d (xi=%v n=%d): FitGPD loglik %.10g < Nelder–Mead %.10g", i, xi, n, fit.LogLik, best)
		}
	}
}

func TestFitGPDIsLocalMaximum(t *testing.T) {
	for i, c := range []struct {
		xi float64
		n  int
	}{{-0.45, 40}, {-0.2, 200}, {0, 60}, {0.1, 5000}, {0.4, 40}, {0.9, 1000}} {
		exc := gpdDraws(c.n, c.xi, 1.5, uint64(200+i))
		fit, err := FitGPD(exc)
		if err != nil {
			t.Fatal(err)
		}
		if fit.Xi <= -1 {
			t.Fatalf("case %d: fit on the xi=-1 edge; pick a sample with an interior maximum", i)
		}
		tol := 1e-9 * math.Abs(fit.LogLik)
		for _, d := range []float64{1e-3, 1e-5} {
			for _, p := range [][2]float64{{d, 0}, {-d, 0}, {0, d}, {0, -d}, {d, d}, {-d, -d}, {d, -d}, {-d, d}} {
				ll := gpdLogLik(exc, fit.Xi+p[0], fit.Sigma*(1+p[1]))
				if ll > fit.LogLik+tol {
					t.Errorf("case %d: loglik %.12g at (%+g, %+g) beats the fit's %.12g", i, ll, p[0], p[1], fit.LogLik)
				}
			}
		}
	}
}

func TestFitGPDSmallSamplesRobust(t *testing.T) {
	for i := 0; i < 400; i++ {
		xi := -0.5 + 1.5*float64(i%16)/15
		exc := gpdDraws(20, xi, 1, uint64(5000+i))
		fit, err := FitGPD(exc)
		if err != nil {
			t.Fatalf("case %d (xi=%v): %v", i, xi, err)
		}
		n := float64(len(exc))
		mean := 0.0
		for _, v := range exc {
			mean += v / n
		}
		expLL := -n*math.Log(mean) - n // the exponential candidate
		if !(fit.Xi >= -1 && fit.Xi <= xiScanHardMax) || !(fit.Sigma > 0) || fit.LogLik < expLL-1e-9*math.Abs(expLL) {
			t.Errorf("case %d (xi=%v): fit %+v, exponential loglik %v", i, xi, fit, expLL)
		}
	}
}

func TestFitGPDScaleEquivariant(t *testing.T) {
	exc := gpdDraws(300, 0.3, 1, 7)
	a, _ := FitGPD(exc)
	scaled := make([]float64, len(exc))
	for i, v := range exc {
		scaled[i] = 1000 * v
	}
	b, _ := FitGPD(scaled)
	if math.Abs(a.Xi-b.Xi) > 1e-9 || math.Abs(b.Sigma/a.Sigma/1000-1) > 1e-9 ||
		math.Abs(b.LogLik-(a.LogLik-300*math.Log(1000))) > 1e-7 {
		t.Errorf("fit of x: %+v; of 1000x: %+v", a, b)
	}
}

func TestFitGPDOrderAndReuse(t *testing.T) {
	exc := gpdDraws(500, 0.2, 1, 8)
	a, _ := FitGPD(exc)
	rev := slices.Clone(exc)
	slices.Reverse(rev)
	var f GPDFitter
	for range 3 {
		b, err := f.Fit(rev)
		if err != nil || b != a {
			t.Fatalf("fit depends on order or reuse: %+v vs %+v (%v)", b, a, err)
		}
		other := gpdDraws(50, -0.3, 5, 9)
		if _, err := f.Fit(other); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(rev[:3], []float64{exc[499], exc[498], exc[497]}) {
		t.Error("Fit modified its input")
	}
}

func TestFitGPDNoAllocsAfterWarmup(t *testing.T) {
	exc := gpdDraws(1000, 0.2, 1, 10)
	var f GPDFitter
	f.Fit(exc)
	if a := testing.AllocsPerRun(20, func() { f.Fit(exc) }); a != 0 {
		t.Errorf("GPDFitter.Fit allocates %v times per call", a)
	}
}

func TestFitGPDLargeSample(t *testing.T) {
	exc := gpdDraws(100000, 0.1, 3, 11)
	fit, err := FitGPD(exc)
	if err != nil || math.Abs(fit.Xi-0.1) > 0.02 {
		t.Errorf("n=100000: %+v %v", fit, err)
	}
}

func TestFitGPDErrors(t *testing.T) {
	cases := []struct {
		name string
		exc  []float64
		want error
	}{
		{"too few", []float64{1, 2, 3}, ErrTooFewSamples},
		{"negative", append(gpdDraws(20, 0, 1, 1), -1), ErrInvalidInput},
		{"NaN", append(gpdDraws(20, 0, 1, 1), math.NaN()), ErrInvalidInput},
		{"Inf", append(gpdDraws(20, 0, 1, 1), math.Inf(1)), ErrInvalidInput},
		{"all equal", slices.Repeat([]float64{2}, 30), ErrDegenerate},
	}
	for _, c := range cases {
		if _, err := FitGPD(c.exc); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestGPDLogLik(t *testing.T) {
	y := []float64{0.5, 1, 2}
	ll, err := GPDLogLik(y, 0, 2)
	if want := -3*math.Log(2) - 3.5/2; err != nil || math.Abs(ll-want) > 1e-15 {
		t.Errorf("exponential: %v %v, want %v", ll, err, want)
	}
	// Continuity through xi = 0.
	near, _ := GPDLogLik(y, 1e-12, 2)
	if math.Abs(near-ll) > 1e-10 {
		t.Errorf("xi=1e-12: %v vs xi=0: %v", near, ll)
	}
	// Outside the support (endpoint sigma/|xi| = 1.5 < 2).
	if ll, _ := GPDLogLik(y, -2.0/1.5, 2); !math.IsInf(ll, -1) {
		t.Errorf("outside support: %v, want -Inf", ll)
	}
	// xi = -1 with a value on the endpoint: the uniform density 1/sigma.
	if ll, _ := GPDLogLik([]float64{0.5, 2}, -1, 2); math.Abs(ll+2*math.Log(2)) > 1e-15 {
		t.Errorf("xi=-1 on the endpoint: %v, want %v", ll, -2*math.Log(2))
	}
	if ll, _ := GPDLogLik([]float64{0.5, 2}, -1.5, 3); !math.IsInf(ll, 1) {
		t.Errorf("xi<-1 on the endpoint: %v, want +Inf", ll)
	}
	for _, c := range []struct {
		y         []float64
		xi, sigma float64
		want      error
	}{{nil, 0, 1, ErrTooFewSamples}, {y, 0, 0, ErrInvalidParameter}, {y, math.NaN(), 1, ErrInvalidParameter}, {[]float64{-1}, 0, 1, ErrInvalidInput}} {
		if _, err := GPDLogLik(c.y, c.xi, c.sigma); !errors.Is(err, c.want) {
			t.Errorf("GPDLogLik(%v, %v, %v): %v, want %v", c.y, c.xi, c.sigma, err, c.want)
		}
	}
}

func TestPOTQuantile(t *testing.T) {
	a, err := POTQuantile(100, 0, 10, 50, 1000, 0.999)
	if want := 100 + 10*math.Log(50); err != nil || math.Abs(a-want) > 1e-12 {
		t.Errorf("xi=0: %v %v, want %v", a, err, want)
	}
	b, _ := POTQuantile(100, 1e-12, 10, 50, 1000, 0.999)
	if math.Abs(a-b) > 1e-9 {
		t.Errorf("not continuous at xi=0: %v vs %v", a, b)
	}
	for _, c := range []struct {
		u, xi, sigma float64
		nExc, nTotal int
		p            float64
	}{
		{100, 0, 10, 50, 1000, 1},
		{100, 0, 10, 50, 1000, 0},
		{100, 0, 0, 50, 1000, 0.99},
		{100, 0, 10, 0, 1000, 0.99},
		{100, 0, 10, 2000, 1000, 0.99},
		{100, 0, 10, 50, 1000, 0.9}, // 1-p = 0.1 >= zeta = 0.05
		{math.NaN(), 0, 10, 50, 1000, 0.99},
	} {
		if _, err := POTQuantile(c.u, c.xi, c.sigma, c.nExc, c.nTotal, c.p); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("POTQuantile%+v: %v, want ErrInvalidParameter", c, err)
		}
	}
}

// nelderMead minimises f in two dimensions from x0 (standard coefficients,
// initial simplex steps 0.1) and returns the best value found.
func nelderMead(f func([2]float64) float64, x0 [2]float64, maxEval int) float64 {
	type vertex struct {
		x [2]float64
		f float64
	}
	s := [3]vertex{{x0, f(x0)}}
	for i := 0; i < 2; i++ {
		x := x0
		x[i] += 0.1
		s[i+1] = vertex{x, f(x)}
	}
	lerp := func(a, b [2]float64, t float64) [2]float64 {
		return [2]float64{a[0] + t*(b[0]-a[0]), a[1] + t*(b[1]-a[1])}
	}
	for evals := 3; evals < maxEval; {
		slices.SortFunc(s[:], func(a, b vertex) int {
			switch {
			case a.f < b.f:
				return -1
			case a.f > b.f:
				return 1
			}
			return 0
		})
		if math.Abs(s[2].f-s[0].f) <= 1e-14*math.Abs(s[0].f) && math.Abs(s[2].x[0]-s[0].x[0]) < 1e-10 {
			break
		}
		c := lerp(s[0].x, s[1].x, 0.5)
		r := lerp(s[2].x, c, 2)
		fr := f(r)
		evals++
		switch {
		case fr < s[0].f:
			e := lerp(s[2].x, c, 3)
			if fe := f(e); fe < fr {
				s[2] = vertex{e, fe}
			} else {
				s[2] = vertex{r, fr}
			}
			evals++
		case fr < s[1].f:
			s[2] = vertex{r, fr}
		default:
			k := lerp(s[2].x, c, 0.5)
			if fk := f(k); fk < s[2].f {
				s[2] = vertex{k, fk}
			} else {
				for i := 1; i < 3; i++ {
					s[i].x = lerp(s[0].x, s[i].x, 0.5)
					s[i].f = f(s[i].x)
				}
				evals += 2
			}
			evals++
		}
	}
	return min(s[0].f, s[1].f, s[2].f)
}
