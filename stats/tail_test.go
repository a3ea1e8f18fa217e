package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// profileDeviance recomputes, by a brute-force golden-section search over
// xi with GPDLogLik in the data's units, the deviance
// 2*(l_max - max{l : x_p = u + d}) of a tail quantile: an independent
// check of the profile interval.
func profileDeviance(exc []float64, fit GPD, L, d float64) float64 {
	prof := func(xi float64) float64 {
		sigma := d / (L * expm1x(xi*L))
		ll := gpdLogLik(exc, xi, sigma)
		if math.IsNaN(ll) {
			return math.Inf(-1)
		}
		return ll
	}
	// The profile in xi is unimodal here; bracket on a grid, then refine.
	bestXi, best := 0.0, math.Inf(-1)
	for xi := -0.99; xi <= 3; xi += 0.01 {
		if v := prof(xi); v > best {
			bestXi, best = xi, v
		}
	}
	a, b := bestXi-0.01, bestXi+0.01
	gr := (math.Sqrt(5) - 1) / 2
	for range 100 {
		c, e := b-gr*(b-a), a+gr*(b-a)
		if prof(c) > prof(e) {
			b = e
		} else {
			a = c
		}
	}
	return 2 * (fit.LogLik - prof((a+b)/2))
}

func TestProfileIntervalDeviance(t *testing.T) {
	crit, _ := chi2Crit(0.95)
	for i, c := range []struct {
		xi float64
		n  int
	}{{0.1, 80}, {0.3, 400}, {-0.2, 150}, {0.7, 60}} {
		exc := gpdDraws(c.n, c.xi, 5, uint64(300+i))
		var f GPDFitter
		fit, err := f.Fit(exc)
		if err != nil {
			t.Fatal(err)
		}
		L := math.Log(20) // zeta/(1-p) = 0.05/0.0025
		lo, hi, unb, err := f.profileInterval(L, 0.95)
		if err != nil || unb {
			t.Fatalf("case %d: %v unbounded=%v", i, err, unb)
		}
		scale := f.full.scale
		dhat := fit.Sigma * L * expm1x(fit.Xi*L)
		if !(lo*scale < dhat && dhat < hi*scale) {
			t.Errorf("case %d: interval [%v, %v] misses the estimate %v", i, lo*scale, hi*scale, dhat)
		}
		for _, d := range []float64{lo * scale, hi * scale} {
			if dev := profileDeviance(exc, fit, L, d); math.Abs(dev-crit) > 2e-3 {
				t.Errorf("case %d: deviance at bound %v is %v, want %v", i, d, dev, crit)
			}
		}
	}
}

func TestTailQuantileGPD(t *testing.T) {
	// Lomax(alpha=3): GPD(xi=1/3, sigma=1/3) everywhere, true P99.9 = 9.
	values := gpdDraws(50000, 1.0/3, 1.0/3, 21)
	for _, m := range []IntervalMethod{IntervalProfile, IntervalDelta} {
		cfg := DefaultTailConfig()
		cfg.Interval = m
		cfg.ExceedanceScale = -1 // the fixed P95 threshold: 2,500 exceedances
		est, err := TailQuantile(values, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if est.Method != m.String() {
			t.Errorf("method %v, want %v", est.Method, m)
		}
		if math.Abs(est.Estimate/9-1) > 0.1 || !(est.Lower < est.Estimate && est.Estimate < est.Upper) ||
			!(est.Lower < 9 && 9 < est.Upper) {
			t.Errorf("%v: %+v (true 9)", m, est)
		}
		if est.NExceed < 2400 || est.NExceed > 2501 || est.N != 50000 || math.Abs(est.Xi-1.0/3) > 0.1 {
			t.Errorf("%v: model %+v", m, est)
		}
		sorted := slices.Sorted(slices.Values(values))
		if want, _ := Quantile(sorted, 0.999); est.Empirical != want {
			t.Errorf("%v: Empirical %v, want the sorted sample's P99.9 %v", m, est.Empirical, want)
		}
		if m == IntervalDelta {
			if d := (est.Upper - est.Estimate) - (est.Estimate - est.Lower); math.Abs(d) > 1e-9*est.Estimate {
				t.Errorf("delta interval not symmetric: %+v", est)
			}
		}
	}
}

func TestTailQuantileEmpiricalFallback(t *testing.T) {
	values := lognormalDraws(400, 0.6, 22) // 20 exceedances of P95 < 30
	est, err := TailQuantile(values, DefaultTailConfig())
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(values))
	want, _ := Quantile(sorted, 0.999)
	if est.Method != MethodEmpirical || est.Estimate != want || est.Empirical != want || est.NExceed != 20 || est.Xi != 0 {
		t.Errorf("fallback: %+v, want empirical %v", est, want)
	}
	// n*(1-p) = 0.4: no order statistic bounds P99.9 from above.
	if !est.UpperUnbounded || est.Upper != sorted[len(sorted)-1] || !(est.Lower <= est.Estimate) {
		t.Errorf("fallback interval: %+v", est)
	}
	l, u := orderStatInterval(400, 0.999, 0.95)
	if est.Lower != sorted[l-1] || u != 401 {
		t.Errorf("ranks (%d, %d), lower %v", l, u, est.Lower)
	}
}

func TestOrderStatInterval(t *testing.T) {
	for _, c := range []struct {
		n     int
		p, lv float64
	}{{1000, 0.5, 0.95}, {100000, 0.999, 0.95}, {50, 0.9, 0.9}, {5000, 0.99, 0.99}} {
		l, u := orderStatInterval(c.n, c.p, c.lv)
		a := (1 - c.lv) / 2
		// l is the largest rank with P(X_(l) > x_p) <= a, u the smallest
		// with P(X_(u) < x_p) <= a.
		if !(binomCDF(l-1, c.n, c.p) <= a && (l == c.n || binomCDF(l, c.n, c.p) > a)) {
			t.Errorf("%+v: lower rank %d not maximal", c, l)
		}
		if !(u > c.n || 1-binomCDF(u-1, c.n, c.p) <= a) || (u > 1 && 1-binomCDF(u-2, c.n, c.p) <= a) {
			t.Errorf("%+v: upper rank %d not minimal", c, u)
		}
	}
}

func TestTailEstimateTopMatchesEstimate(t *testing.T) {
	values := lognormalDraws(30000, 0.6, 23)
	cfg := DefaultTailConfig()
	var e TailEstimator
	want, err := e.Estimate(values, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := largest(values, 2*TailSize(len(values), cfg.ThresholdQuantile))
	got, err := e.EstimateTop(s.Top(), len(values), cfg)
	if err != nil || got != want {
		t.Errorf("EstimateTop %+v (%v), Estimate %+v", got, err, want)
	}
	// Deterministic, and no allocation once warm.
	again, _ := e.Estimate(values, cfg)
	if again != want {
		t.Error("Estimate is not deterministic")
	}
	if a := testing.AllocsPerRun(5, func() { e.Estimate(values, cfg) }); a != 0 {
		t.Errorf("TailEstimator.Estimate allocates %v times per call", a)
	}
	short := s.Top()[s.Len()-TailSize(len(values), cfg.ThresholdQuantileAt(len(values)))+1:]
	if _, err := e.EstimateTop(short, len(values), cfg); !errors.Is(err, ErrTooFewSamples) {
		t.Errorf("short top: %v", err)
	}
	unsorted := slices.Clone(s.Top())
	unsorted[0], unsorted[1] = unsorted[1]+1, unsorted[0]
	if _, err := e.EstimateTop(unsorted, len(values), cfg); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("unsorted top: %v", err)
	}
}

func TestTailQuantileUpperUnbounded(t *testing.T) {
	// 40 exceedances of a very heavy tail extrapolated to 1 - 1e-6: the
	// profile likelihood leaves the upper end open.
	values := gpdDraws(800, 1.5, 1, 24)
	cfg := TailConfig{P: 1 - 1e-6}
	est, err := TailQuantile(values, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if est.Method != MethodGPDProfile || !est.UpperUnbounded || !(est.Upper > est.Estimate) || math.IsInf(est.Upper, 0) {
		t.Errorf("%+v", est)
	}
}

func TestTailConfigValidate(t *testing.T) {
	if err := (TailConfig{}).Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	for _, c := range []TailConfig{
		{P: 1.2}, {P: 0.9, ThresholdQuantile: 0.95}, {MinExceedances: 3}, {Level: 1}, {Interval: 7},
	} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%+v: %v", c, err)
		}
		if _, err := TailQuantile([]float64{1, 2, 3}, c); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("TailQuantile with %+v: %v", c, err)
		}
	}
	if _, err := TailQuantile(nil, TailConfig{}); !errors.Is(err, ErrTooFewSamples) {
		t.Errorf("empty: %v", err)
	}
	if _, err := TailQuantile([]float64{1, math.NaN()}, TailConfig{}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("NaN: %v", err)
	}
}

func TestThresholdAndQuantile(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {1, 10}, {0.5, 5.5}, {0.25, 3.25}, {0.95, 9.55}} {
		if got, err := Quantile(x, c.q); err != nil || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v %v, want %v", c.q, got, err, c.want)
		}
	}
	if _, err := Quantile(nil, 0.5); !errors.Is(err, ErrTooFewSamples) {
		t.Error(err)
	}
	if _, err := Quantile(x, 1.5); !errors.Is(err, ErrInvalidParameter) {
		t.Error(err)
	}
	u, k, ok := Threshold(x, 0.75, 2)
	if u != 7.75 || k != 3 || !ok {
		t.Errorf("Threshold = %v %v %v", u, k, ok)
	}
	if _, _, ok := Threshold(x, 0.75, 4); ok {
		t.Error("Threshold ok with too few exceedances")
	}
	// Ties at the threshold are not exceedances.
	if u, k, _ := Threshold([]float64{1, 2, 2, 2, 2}, 0.5, 1); u != 2 || k != 0 {
		t.Errorf("ties: u=%v k=%v", u, k)
	}
}

func TestSelectK(t *testing.T) {
	r := lognormalDraws(3000, 1, 25)
	for i := range r {
		r[i] = math.Round(r[i] * 3) // many ties
	}
	sorted := slices.Sorted(slices.Values(r))
	for _, k := range []int{0, 1, 17, 1500, 2998, 2999} {
		a := slices.Clone(r)
		selectK(a, k)
		if a[k] != sorted[k] || slices.Max(a[:k+1]) != a[k] || (k+1 < len(a) && slices.Min(a[k+1:]) < a[k]) {
			t.Errorf("selectK(%d): got %v want %v", k, a[k], sorted[k])
		}
	}
	// Adversarial (sorted, reversed, constant) inputs stay correct.
	for _, a := range [][]float64{slices.Clone(sorted), slices.Repeat([]float64{4}, 100)} {
		b := slices.Clone(a)
		slices.Reverse(b)
		selectK(b, len(b)/2)
		if b[len(b)/2] != a[len(a)/2] {
			t.Error("selectK on a reversed input")
		}
	}
}

// TestThresholdQuantileAt: u is the configured quantile up to n =
// (c/(1-q0))^2 = 10,000, then rises so that about c*sqrt(n) values exceed
// it, capped at 1-5(1-P); a negative scale fixes it. Estimate uses it: on
// 100,000 values the fit has ~1,581 exceedances, not 5,000.
func TestThresholdQuantileAt(t *testing.T) {
	c := DefaultTailConfig()
	for _, tc := range []struct {
		n    int
		want float64
	}{{1000, 0.95}, {10000, 0.95}, {40000, 0.975}, {100000, 1 - 5/math.Sqrt(1e5)}, {1e6, 0.995}, {1e8, 0.995}} {
		if got := c.ThresholdQuantileAt(tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ThresholdQuantileAt(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	fixed := c
	fixed.ExceedanceScale = -1
	if got := fixed.ThresholdQuantileAt(100000); got != 0.95 {
		t.Errorf("fixed threshold at 100000: %v", got)
	}
	if got := (TailConfig{}).ThresholdQuantileAt(100000); got != c.ThresholdQuantileAt(100000) {
		t.Errorf("zero config: %v, want the default's", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	values := make([]float64, 100000)
	for i := range values {
		values[i] = math.Exp(0.6 * r.NormFloat64())
	}
	est, err := TailQuantile(values, c)
	if err != nil {
		t.Fatal(err)
	}
	if est.NExceed < 1570 || est.NExceed > 1590 {
		t.Errorf("n=100000: %d exceedances, want ~1581", est.NExceed)
	}
	est, err = TailQuantile(values, fixed)
	if err != nil {
		t.Fatal(err)
	}
	if est.NExceed < 4990 || est.NExceed > 5010 {
		t.Errorf("fixed threshold, n=100000: %d exceedances, want ~5000", est.NExceed)
	}
	if err := (TailConfig{ExceedanceScale: math.NaN()}).Validate(); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("NaN ExceedanceScale: %v", err)
	}
}

// TestTailEstimatorExcesses checks Excesses: after a GPD fit, the sorted
// x − u of the values above u (NExceed of them); after an empirical
// estimate, none.
func TestTailEstimatorExcesses(t *testing.T) {
	values := lognormalDraws(5000, 0.6, 7)
	var e TailEstimator
	est, err := e.Estimate(values, DefaultTailConfig())
	if err != nil || est.Method == MethodEmpirical {
		t.Fatalf("estimate %+v (%v), want a GPD fit", est, err)
	}
	var want []float64
	for _, v := range values {
		if v > est.Threshold {
			want = append(want, v-est.Threshold)
		}
	}
	slices.Sort(want)
	if got := e.Excesses(); len(got) != est.NExceed || !slices.Equal(got, want) {
		t.Fatalf("Excesses: %d values, want the %d sorted excesses over u=%v", len(got), len(want), est.Threshold)
	}
	few, err := e.Estimate(values[:300], TailConfig{P: 0.999, ThresholdQuantile: 0.95, MinExceedances: 50})
	if err != nil || few.Method != MethodEmpirical || len(e.Excesses()) != 0 {
		t.Fatalf("300 values: %+v (%v), Excesses %d, want empirical and none", few, err, len(e.Excesses()))
	}
}
