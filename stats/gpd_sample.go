package stats

import "math"

// This file holds the numerical engine behind the GPD fit and the
// profile-likelihood interval. Everything works on exceedances scaled by
// their maximum (so y is in (0, 1] and the support bound is theta > -1) and
// on theta = xi/sigma.
//
// The data enter only through A(theta) = mean(log1p(theta*y)/theta) and its
// first two derivatives A1, A2. Near theta = 0 the closed forms cancel, so
// there A is summed as a power series in theta from the power sums of y.

// seriesLimit is the |theta| below which moments use the power series; with
// y <= 1 the truncation error is below 1e-18 relative.
const (
	seriesLimit = 0.02
	seriesTerms = 12 // j = 0..11 in A = sum_j (-1)^j theta^j M_{j+1}/(j+1)
)

// gpdSample is a sorted sample of scaled exceedances.
type gpdSample struct {
	y     []float64
	n     float64
	scale float64                  // the original maximum: y = x/scale
	pw    [seriesTerms + 2]float64 // pw[k] = mean(y^k)
}

func (s *gpdSample) init(y []float64, scale float64) {
	s.y = y
	s.n = float64(len(y))
	s.scale = scale
	s.pw = [seriesTerms + 2]float64{}
	for _, v := range y {
		p := v
		for k := 1; k < len(s.pw); k++ {
			s.pw[k] += p
			p *= v
		}
	}
	s.pw[0] = s.n
	for k := range s.pw {
		s.pw[k] /= s.n
	}
}

// moments returns A(theta) = mean(log1p(theta*y))/theta (A(0) = mean(y)) and
// its derivatives A1 = A', A2 = A”. theta must be > -1.
func (s *gpdSample) moments(theta float64) (a0, a1, a2 float64) {
	if math.Abs(theta) <= seriesLimit {
		// Horner in theta for the three series.
		for j := seriesTerms - 1; j >= 0; j-- {
			c := s.pw[j+1] / float64(j+1)
			if j%2 == 1 {
				c = -c
			}
			a0 = a0*theta + c
			if j >= 1 {
				a1 = a1*theta + float64(j)*c
			}
			if j >= 2 {
				a2 = a2*theta + float64(j*(j-1))*c
			}
		}
		return a0, a1, a2
	}
	var sl, s1, s2 float64
	for _, v := range s.y {
		u := theta * v
		w := 1 / (1 + u)
		sl += math.Log(1 + u)
		yw := v * w
		s1 += yw
		s2 += yw * yw
	}
	inv := 1 / s.n
	a0 = sl * inv / theta
	a1 = (s1*inv - a0) / theta
	a2 = -(s2*inv + 2*a1) / theta
	return a0, a1, a2
}

// g0 returns g(u) = log1p(u)/u (g(0) = 1) and its first two derivatives.
func g0(u float64) (g, g1, g2 float64) {
	if math.Abs(u) < seriesLimit {
		const terms = 14
		for j := terms - 1; j >= 0; j-- {
			c := 1 / float64(j+1)
			if j%2 == 1 {
				c = -c
			}
			g = g*u + c
			if j >= 1 {
				g1 = g1*u + float64(j)*c
			}
			if j >= 2 {
				g2 = g2*u + float64(j*(j-1))*c
			}
		}
		return g, g1, g2
	}
	w := 1 / (1 + u)
	g = math.Log1p(u) / u
	g1 = (w - g) / u
	g2 = (-w*w - 2*g1) / u
	return g, g1, g2
}

// gpdObjective is a smooth function of theta to maximise, per exceedance.
//
// Without a quantile constraint (d == 0) it is Grimshaw's profile
//
//	f(theta) = -log A - theta*A            (= loglik/n + 1 + log(scale))
//
// with xi = theta*A and sigma = A. With the constraint that the excess of
// the tail quantile over the threshold is d (scaled), L = log(zeta/(1-p)),
// xi = log1p(theta*d)/L and sigma = d*g(theta*d)/L, it is
//
//	h(theta) = -log(d*G/L) - theta*A - (L/d)*A/G,  G = g(theta*d)
//
// (= loglik/n + log(scale)); its maximum over theta is the profile
// log-likelihood of the quantile.
type gpdObjective struct {
	s *gpdSample
	d float64 // 0: unconstrained profile
	L float64
}

// eval returns the objective, its first and second derivatives and A.
func (o *gpdObjective) eval(theta float64) (f, g, h, a0 float64) {
	a0, a1, a2 := o.s.moments(theta)
	if o.d == 0 {
		r := a1 / a0
		f = -math.Log(a0) - theta*a0
		g = -r - a0 - theta*a1
		h = -(a2/a0 - r*r) - 2*a1 - theta*a2
		return f, g, h, a0
	}
	d, L := o.d, o.L
	G, G1, G2 := g0(theta * d)
	G1 *= d
	G2 *= d * d
	c := L / d
	q := G1 / G
	f = -math.Log(d*G/L) - theta*a0 - c*a0/G
	g = -q - a0 - theta*a1 - c*(a1/G-a0*G1/(G*G))
	h = -(G2/G - q*q) - 2*a1 - theta*a2 -
		c*(a2/G-2*a1*G1/(G*G)-a0*G2/(G*G)+2*a0*G1*G1/(G*G*G))
	return f, g, h, a0
}

// grad returns only the derivative.
func (o *gpdObjective) grad(theta float64) float64 {
	_, g, _, _ := o.eval(theta)
	return g
}

// xiAt returns the shape at theta.
func (o *gpdObjective) xiAt(theta, a0 float64) float64 {
	if o.d == 0 {
		return theta * a0
	}
	return math.Log1p(theta*o.d) / o.L
}

// climb maximises the objective by Newton iteration on its derivative,
// safeguarded by a bracket: a (where the derivative is known positive, if
// haveA) and b (known negative, if haveB). Newton steps are taken where the
// objective is concave and the step stays inside the bracket and within
// two units of log1p(theta); otherwise it bisects the bracket in
// log1p(theta), or walks uphill by one unit when one side is still open.
// The domain is theta > lo, or theta >= lo when closed (a maximum on that
// edge is returned as such). It stops when the next step would be below
// tol*(|theta| + 1e-3) and returns the last evaluated point, its value
// and A there.
func (o *gpdObjective) climb(x, a float64, haveA bool, b float64, haveB bool, lo float64, closed bool, tol float64) (theta, f, a0 float64, ok bool) {
	for it := 0; it < 100; it++ {
		f, g, h, a0 := o.eval(x)
		switch {
		case math.IsNaN(g) || math.IsNaN(f):
			return x, f, a0, false
		case g > 0:
			a, haveA = x, true
		case g < 0:
			b, haveB = x, true
			if closed && x <= lo {
				return x, f, a0, true // maximum on the closed edge
			}
		default:
			return x, f, a0, true
		}
		psi := math.Log1p(x)
		xn := x - g/h
		inside := h < 0 && xn > -1 && math.Abs(math.Log1p(xn)-psi) <= 2 &&
			(!haveA || xn > a) && (!haveB || xn < b) && (xn > lo || (closed && xn >= lo))
		if !inside {
			switch {
			case haveA && haveB:
				xn = psiMid(a, b)
			case g > 0:
				xn = math.Expm1(psi + 1)
			default:
				xn = math.Expm1(psi - 1)
				if xn <= lo {
					if closed {
						xn = lo
					} else {
						xn = psiMid(lo, x)
					}
				}
			}
		}
		if math.Abs(xn-x) <= tol*(math.Abs(x)+1e-3) {
			return x, f, a0, true
		}
		x = xn
	}
	return x, 0, 0, false
}
