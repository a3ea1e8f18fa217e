package stats

import "math"

// This file ports scipy.stats._ksstats (Simard & L'Ecuyer 2011) for the
// survival function of the two-sided one-sample Kolmogorov–Smirnov
// statistic D_n, which SciPy's two-sample 'asymp' method evaluates at the
// effective size round(n*m/(n+m)), and scipy.special.smirnov (the one-sided
// D_n^+ survival function) which it calls for large d.

var (
	ep128 = math.Ldexp(1, 128)
	em128 = math.Ldexp(1, -128)
)

const (
	kolMinLog = -708.0
	// minLogDouble is log(DBL_MIN), cephes' MINLOG.
	minLogDouble = -7.08396418532264106224e2
)

// KolmogorovSF returns P(D_n >= d) for the two-sided one-sample
// Kolmogorov–Smirnov statistic with sample size n (scipy.stats.kstwo.sf).
// Exact (Ruben–Gambino, Durbin matrix, Pomeranz, Smirnov) or Pelz–Good
// asymptotic depending on n and n*d^2, as SciPy chooses. Errors:
// n < 1 or d NaN (ErrInvalidParameter).
func KolmogorovSF(d float64, n int) (float64, error) {
	if n < 1 || math.IsNaN(d) {
		return 0, errf(ErrInvalidParameter, "kstwo.sf(d=%v, n=%d): need n >= 1 and d a number", d, n)
	}
	return kstwoSF(d, n), nil
}

// kstwoSF is _kolmogn(n, x, cdf=False).
func kstwoSF(x float64, n int) float64 {
	if x >= 1 {
		return 0
	}
	if x <= 0 {
		return 1
	}
	fn := float64(n)
	t := fn * x
	if t <= 1 { // Ruben–Gambino: 1/(2n) <= x <= 1/n
		if t <= 0.5 {
			return 1
		}
		var prob float64
		if n <= 140 {
			prob = 1
			for i := 1; i <= n; i++ {
				prob *= float64(i) * (1 / fn) * (2*t - 1)
			}
		} else {
			prob = math.Exp(logNFactorialDivNPowN(fn) + fn*math.Log(2*t-1))
		}
		return clamp01(1 - prob)
	}
	if t >= fn-1 { // Ruben–Gambino
		return clamp01(2 * math.Pow(1-x, fn))
	}
	if x >= 0.5 {
		return clamp01(2 * smirnovSF(n, x))
	}
	nxsq := t * x
	if n <= 140 {
		if nxsq <= 0.754693 {
			return clamp01(1 - kolmogDMTW(n, x))
		}
		if nxsq <= 4 {
			return clamp01(1 - kolmogPomeranz(n, x))
		}
		return clamp01(2 * smirnovSF(n, x))
	}
	if nxsq >= 370 {
		return 0
	}
	if nxsq >= 2.2 {
		return clamp01(2 * smirnovSF(n, x))
	}
	var cdf float64
	if n <= 100000 && fn*math.Pow(x, 1.5) <= 1.4 {
		cdf = kolmogDMTW(n, x)
	} else {
		cdf = kolmogPelzGood(n, x)
	}
	return clamp01(1 - cdf)
}

// logNFactorialDivNPowN is log(n!/n^n) by Stirling's series.
func logNFactorialDivNPowN(n float64) float64 {
	coeffs := [...]float64{-2.955065359477124183e-2, 6.4102564102564102564e-3,
		-1.9175269175269175269e-3, 8.4175084175084175084e-4,
		-5.952380952380952381e-4, 7.9365079365079365079e-4,
		-2.7777777777777777778e-3, 8.3333333333333333333e-2}
	rn := 1 / n
	x := rn / n
	poly := 0.0
	for _, c := range coeffs {
		poly = poly*x + c
	}
	return math.Log(n)/2 - n + math.Log(2*math.Pi)/2 + rn*poly
}

// kolmogDMTW is P(D_n <= d) by the Durbin matrix algorithm as organised by
// Marsaglia, Tsang and Wang (2003): the k-th diagonal entry of H^n, scaled.
func kolmogDMTW(n int, d float64) float64 {
	if d >= 1 {
		return 1
	}
	fn := float64(n)
	nd := fn * d
	if nd <= 0.5 {
		return 0
	}
	k := int(math.Ceil(nd))
	h := float64(k) - nd
	m := 2*k - 1
	H := newMat(m)
	v := make([]float64, m)
	w := make([]float64, m)
	fac := 1.0
	for j := 1; j <= m; j++ {
		v[j-1] = 1 - math.Pow(h, float64(j))
		w[j-1] = fac
		fac /= float64(j)
		v[j-1] *= fac
	}
	tt := math.Pow(max(2*h-1, 0), float64(m)) - 2*math.Pow(h, float64(m))
	v[m-1] = (1 + tt) * fac
	for i := 1; i < m; i++ {
		for r := i - 1; r < m; r++ {
			H.set(r, i, w[r-(i-1)])
		}
	}
	for r := 0; r < m; r++ {
		H.set(r, 0, v[r])
	}
	for c := 0; c < m; c++ {
		H.set(m-1, c, v[m-1-c])
	}
	P := identity(m)
	tmp := newMat(m)
	expnt, hExpnt := 0, 0
	for nn := n; nn > 0; nn /= 2 {
		if nn%2 == 1 {
			matMul(tmp, P, H)
			P, tmp = tmp, P
			expnt += hExpnt
		}
		matMul(tmp, H, H)
		H, tmp = tmp, H
		hExpnt *= 2
		if math.Abs(H.at(k-1, k-1)) > ep128 {
			for i := range H.a {
				H.a[i] /= ep128
			}
			hExpnt += 128
		}
	}
	p := P.at(k-1, k-1)
	for i := 1; i <= n; i++ {
		p = float64(i) * p / fn
		if math.Abs(p) < em128 {
			p *= ep128
			expnt -= 128
		}
	}
	if expnt != 0 {
		p = math.Ldexp(p, expnt)
	}
	return clamp01(p)
}

// mat is a dense square matrix.
type mat struct {
	m int
	a []float64
}

func newMat(m int) mat { return mat{m: m, a: make([]float64, m*m)} }
func identity(m int) mat {
	x := newMat(m)
	for i := 0; i < m; i++ {
		x.a[i*m+i] = 1
	}
	return x
}
func (x mat) at(r, c int) float64     { return x.a[r*x.m+c] }
func (x mat) set(r, c int, v float64) { x.a[r*x.m+c] = v }

// matMul sets dst = a*b (dst distinct from a and b).
func matMul(dst, a, b mat) {
	m := a.m
	clear(dst.a)
	for i := 0; i < m; i++ {
		row := dst.a[i*m : (i+1)*m]
		for k := 0; k < m; k++ {
			aik := a.a[i*m+k]
			if aik == 0 {
				continue
			}
			brow := b.a[k*m : (k+1)*m]
			for j := range row {
				row[j] += aik * brow[j]
			}
		}
	}
}

// kolmogPomeranz is P(D_n <= x) by Pomeranz's (1974) recursion.
func kolmogPomeranz(n int, x float64) float64 {
	fn := float64(n)
	t := fn * x
	ll := int(math.Floor(t))
	f := t - float64(ll)
	g := min(f, 1-f)
	ceilf, roundf := 0, 0
	if f > 0 {
		ceilf = 1
	}
	if f > 0.5 {
		roundf = 1
	}
	npwrs := 2 * (ll + 1)
	gpower := make([]float64, npwrs)
	twogpower := make([]float64, npwrs)
	onem2gpower := make([]float64, npwrs)
	gpower[0], twogpower[0], onem2gpower[0] = 1, 1, 1
	expnt := 0
	gOverN, twoGOverN, oneMinusTwoGOverN := g/fn, 2*g/fn, (1-2*g)/fn
	for m := 1; m < npwrs; m++ {
		gpower[m] = gpower[m-1] * gOverN / float64(m)
		twogpower[m] = twogpower[m-1] * twoGOverN / float64(m)
		onem2gpower[m] = onem2gpower[m-1] * oneMinusTwoGOverN / float64(m)
	}
	V0 := make([]float64, npwrs)
	V1 := make([]float64, npwrs)
	conv := make([]float64, 2*npwrs)
	V1[0] = 1
	V0s, V1s := 0, 0
	j1, j2 := pomeranzJ1J2(0, n, ll, ceilf, roundf)
	for i := 1; i < 2*n+2; i++ {
		k1 := j1
		V0, V1 = V1, V0
		V0s, V1s = V1s, V0s
		clear(V1)
		j1, j2 = pomeranzJ1J2(i, n, ll, ceilf, roundf)
		var pwrs []float64
		switch {
		case i == 1 || i == 2*n+1:
			pwrs = gpower
		case i%2 == 1:
			pwrs = twogpower
		default:
			pwrs = onem2gpower
		}
		ln2 := j2 - k1 + 1
		if ln2 > 0 {
			a := pySlice(V0, k1-V0s, k1-V0s+ln2)
			b := pySlice(pwrs, 0, ln2)
			c := convolve(conv[:0], a, b)
			convStart := j1 - k1
			convLen := j2 - j1 + 1
			src := pySlice(c, convStart, convStart+convLen)
			copy(V1[:min(convLen, len(V1))], src)
			mx := 0.0
			for _, v := range V1 {
				mx = max(mx, v)
			}
			if 0 < mx && mx < em128 {
				for i := range V1 {
					V1[i] *= ep128
				}
				expnt -= 128
			}
			V1s = V0s + j1 - k1
		}
	}
	ans := V1[n-V1s]
	for m := 1; m <= n; m++ {
		if math.Abs(ans) > ep128 {
			ans *= em128
			expnt += 128
		}
		ans *= float64(m)
	}
	if expnt != 0 {
		ans = math.Ldexp(ans, expnt)
	}
	return clamp01(ans)
}

// pomeranzJ1J2 is _pomeranz_compute_j1j2: the interval of row i.
func pomeranzJ1J2(i, n, ll, ceilf, roundf int) (int, int) {
	var j1, j2 int
	if i == 0 {
		j1, j2 = -ll-ceilf-1, ll+ceilf-1
	} else {
		ip1div2, ip1mod2 := (i+1)/2, (i+1)%2
		if ip1mod2 == 0 { // i is odd
			if ip1div2 == n+1 {
				j1, j2 = n-ll-ceilf-1, n+ll+ceilf-1
			} else {
				j1, j2 = ip1div2-1-ll-roundf-1, ip1div2+ll-1+ceilf-1
			}
		} else {
			j1, j2 = ip1div2-1-ll-1, ip1div2+ll+roundf-1
		}
	}
	return max(j1+2, 0), min(j2, n)
}

// pySlice is Python's s[a:b] for a step of 1 (negative indices count from
// the end, out-of-range bounds are clipped).
func pySlice(s []float64, a, b int) []float64 {
	n := len(s)
	if a < 0 {
		a = max(a+n, 0)
	}
	if b < 0 {
		b = max(b+n, 0)
	}
	a, b = min(a, n), min(b, n)
	if b < a {
		return s[a:a]
	}
	return s[a:b]
}

// convolve appends the full discrete convolution of a and b to dst
// (numpy.convolve mode 'full').
func convolve(dst, a, b []float64) []float64 {
	if len(a) == 0 || len(b) == 0 {
		return dst
	}
	l := len(a) + len(b) - 1
	start := len(dst)
	for range l {
		dst = append(dst, 0)
	}
	out := dst[start:]
	for i, av := range a {
		for j, bv := range b {
			out[i+j] += av * bv
		}
	}
	return dst
}

// kolmogPelzGood is the Pelz–Good (1976) approximation of P(D_n <= x).
func kolmogPelzGood(n int, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	fn := float64(n)
	z := math.Sqrt(fn) * x
	z2 := z * z
	z3, z4, z6 := z2*z, z2*z2, z2*z2*z2
	qlog := -math.Pi * math.Pi / 8 / z2
	if qlog < kolMinLog {
		return 0
	}
	q := math.Exp(qlog)
	pi2 := math.Pi * math.Pi
	pi4 := pi2 * pi2
	pi6 := pi4 * pi2
	k1a := -z2
	k1b := pi2 / 4
	k2a := 6*z6 + 2*z4
	k2b := (2*z4 - 5*z2) * pi2 / 4
	k2c := pi4 * (1 - 2*z2) / 16
	k3d := pi6 * (5 - 30*z2) / 64
	k3c := pi4 * (-60*z2 + 212*z4) / 16
	k3b := pi2 * (135*z4 - 96*z6) / 4
	k3a := -30*z6 - 90*z6*z2
	var K [4]float64
	maxk := int(math.Ceil(16 * z / math.Pi))
	for k := maxk; k >= 1; k-- {
		m := float64(2*k - 1)
		m2 := m * m
		m4, m6 := m2*m2, m2*m2*m2
		qp := math.Pow(q, float64(8*k))
		c := [4]float64{1, k1a + k1b*m2, k2a + k2b*m2 + k2c*m4, k3a + k3b*m2 + k3c*m4 + k3d*m6}
		for i := range K {
			K[i] = K[i]*qp + c[i]
		}
	}
	sqrt2pi := math.Sqrt(2 * math.Pi)
	den := [4]float64{z, 6 * z4, 72 * z6 * z, 6480 * z6 * z4}
	for i := range K {
		K[i] *= q * sqrt2pi
		K[i] /= den[i]
	}
	q = math.Exp(-pi2 / 2 / z2)
	sqrt3z := math.Sqrt(3) * z
	var k2extra, k3extra float64
	for k := maxk; k >= 1; k-- {
		fk := float64(k)
		ksq := fk * fk
		qp := math.Pow(q, ksq)
		kspi := math.Pi * fk
		k2extra += ksq * qp
		k3extra += (sqrt3z + kspi) * (sqrt3z - kspi) * ksq * qp
	}
	K[2] += k2extra * pi2 * sqrt2pi / (-36 * z3)
	K[3] += k3extra * pi2 * sqrt2pi / (216 * z6)
	sum := 0.0
	for i := range K {
		sum += K[i] / math.Pow(fn, float64(i)/2)
	}
	return sum
}
