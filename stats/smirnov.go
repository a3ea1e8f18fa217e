package stats

import "math"

// smirnovSF is scipy.special.smirnov(n, x) = P(D_n^+ >= x), by the
// Birnbaum–Tingey sum (all terms positive), in log space:
//
//	x * sum_{v=0}^{floor(n(1-x))} C(n,v) (1-x-v/n)^(n-v) (x+v/n)^(v-1)
//
// with the special cases of xsf::cephes::smirnov (n = 1, x <= 1/n,
// x >= 1-1/n, underflow, n > 1e6).
func smirnovSF(n int, x float64) float64 {
	if x <= 0 {
		return 1
	}
	if x >= 1 {
		return 0
	}
	fn := float64(n)
	if n == 1 {
		return 1 - x
	}
	nx := fn * x
	nxfl := int(math.Floor(nx))
	alpha := nx - float64(nxfl)
	if alpha >= 1 {
		nxfl++
		alpha = 0
	}
	if nxfl == 0 || (nxfl == 1 && alpha == 0) { // x <= 1/n
		return 1 - x*math.Pow(1+x, fn-1)
	}
	if -2*fn*x*x < minLogDouble {
		return 0
	}
	if nxfl >= n-1 { // x >= 1 - 1/n
		return math.Pow(1-x, fn)
	}
	if n > 1000000 {
		logp := -math.Pow(6*fn*x+1, 2) / 18 / fn
		if logp < -math.Ln2 {
			return math.Exp(logp)
		}
		return 1 + math.Expm1(logp)
	}
	last := n - nxfl - 1 // v <= floor(n(1-x)), and v < n(1-x) when n*x is integral
	lgn, _ := math.Lgamma(fn + 1)
	logSum := math.Inf(-1)
	logEps := math.Log(2.220446049250313e-16)
	for v := 0; v <= last; v++ {
		fv := float64(v)
		base1 := (fn-fv)/fn - x // 1 - x - v/n > 0
		if !(base1 > 0) {
			break
		}
		lv, _ := math.Lgamma(fv + 1)
		lnv, _ := math.Lgamma(fn - fv + 1)
		lt := lgn - lv - lnv + (fn-fv)*math.Log(base1) + (fv-1)*math.Log(x+fv/fn)
		logSum = logAdd(logSum, lt)
		// Stop once the remaining terms cannot matter (as xsf does).
		if v > 0 && v < last && math.Log(4*float64(last+1-v))+lt < logEps+logSum {
			break
		}
	}
	return math.Exp(math.Log(x) + logSum)
}

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}
