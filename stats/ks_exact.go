package stats

import "math"

// ksExactTwoSided is scipy.stats._stats_py._attempt_exact_2kssamp for the
// two-sided alternative: P(D_{n1,n2} >= d) under the null. D is first
// rounded to the lattice h/lcm(n1, n2). It returns the rounded d and
// ok=false when the computation does not give a probability.
func ksExactTwoSided(n1, n2, g int, d float64) (p, dRounded float64, ok bool) {
	lcm := int64(n1/g) * int64(n2)
	h := int64(math.RoundToEven(d * float64(lcm)))
	dRounded = float64(h) / float64(lcm)
	if h == 0 {
		return 1, dRounded, true
	}
	if n1 == n2 {
		p = probOutsideSquare(int64(n1), h)
	} else {
		p, ok = outerProbInside(int64(n1), int64(n2), int64(g), h)
		if !ok {
			return math.NaN(), dRounded, false
		}
	}
	if !(p >= 0 && p <= 1) {
		return p, dRounded, false
	}
	return p, dRounded, true
}

// probOutsideSquare is P(D_{n,n} >= h/n) (SciPy's
// _compute_prob_outside_square): the alternating sum
// 2*sum_k (-1)^(k+1) C(2n, n-k*h)/C(2n, n), evaluated Horner-like with each
// ratio built from h simple factors to avoid cancellation.
func probOutsideSquare(n, h int64) float64 {
	P := 0.0
	for k := n / h; k >= 0; k-- {
		p1 := 1.0
		for j := int64(0); j < h; j++ {
			p1 = float64(n-k*h-j) * p1 / float64(n+k*h+j+1)
		}
		P = p1 * (1 - P)
	}
	return 2 * P
}

// outerProbInside is SciPy's _compute_outer_prob_inside_method: the share of
// lattice paths from (0,0) to (m,n) that leave the band
// |x/m - y/n| < h/lcm(m,n), computed as 1-p directly column by column
// (Viehmann's recursion) over a sliding window of the band. ok=false if the
// window arithmetic leaves its buffer (not expected; the caller then falls
// back to the asymptotic p-value).
func outerProbInside(m, n, g, h int64) (float64, bool) {
	if m < n {
		m, n = n, m
	}
	mg := m / g
	ng := n / g
	minj := int64(0)
	maxj := min(int64(math.Ceil(float64(h)/float64(mg))), n+1)
	curlen := maxj - minj
	lenA := min(2*maxj+2, n+1)
	A := make([]float64, lenA)
	for i := range A {
		A[i] = 1
	}
	for i := minj; i < maxj && i < lenA; i++ {
		A[i] = 0
	}
	for i := int64(1); i <= m; i++ {
		lastminj, lastlen := minj, curlen
		minj = max(int64(math.Floor(float64(ng*i-h)/float64(mg)))+1, 0)
		minj = min(minj, n)
		maxj = min(int64(math.Ceil(float64(ng*i+h)/float64(mg))), n+1)
		if maxj <= minj {
			return 1, true
		}
		val := 1.0
		if minj == 0 {
			val = 0
		}
		fi := float64(i)
		for jj := int64(0); jj < maxj-minj; jj++ {
			j := jj + minj
			src := jj + minj - lastminj
			if src >= lenA || jj >= lenA {
				return 0, false
			}
			val = (A[src]*fi + val*float64(j)) / (fi + float64(j))
			A[jj] = val
		}
		curlen = maxj - minj
		if lastlen > curlen {
			for k := maxj - minj; k < maxj-minj+(lastlen-curlen) && k < lenA; k++ {
				A[k] = 1
			}
		}
	}
	return A[maxj-minj-1], true
}
