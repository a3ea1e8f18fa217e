package study

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// Stall mixture parameters: a lognormal(0.6) body; with probability
// StallShare a call is stalled, its latency multiplied by 1 + G with G a
// GPD(xi = StallXi, sigma = StallSigma). Shaped like LLM latency: most
// calls follow the body, a few wait in a queue or on a retry.
const (
	StallShare = 0.06
	StallXi    = 0.2
	StallSigma = 1.0
)

// StallMixture is the LLM-latency mixture above. Above a fixed P95 its
// excesses still mix both components, so it is not yet a GPD there: a POT
// fit at that threshold is biased by about -2.5% whatever n, and its
// interval covers less and less as n grows unless the threshold rises.
func StallMixture() Family {
	return Family{
		Name:     "stall mixture(6%, xi=0.2)",
		Quantile: stallQuantile,
		Sample: func(r *rand.Rand) float64 {
			body := math.Exp(0.6 * r.NormFloat64())
			if r.Float64() >= StallShare {
				return body
			}
			u := 1 - r.Float64() // (0, 1]
			g := StallSigma / StallXi * (math.Pow(u, -StallXi) - 1)
			return body * (1 + g)
		},
	}
}

// stallCDF is P(X <= x) for the mixture: 0.94 Φ(log x / 0.6) + 0.06
// E_Z[F_G(x/exp(0.6 Z) - 1)], the expectation by the trapezoid rule over
// Z in [-9, 9] in steps of 1/400 (error far below 1e-9 at the P99.9).
func stallCDF(x float64) float64 {
	if x <= 0 {
		return 0
	}
	body := distuv.UnitNormal.CDF(math.Log(x) / 0.6)
	const h = 1.0 / 400
	s := 0.0
	for i := -3600; i <= 3600; i++ {
		z := float64(i) * h
		w := h
		if i == -3600 || i == 3600 {
			w = h / 2
		}
		y := x/math.Exp(0.6*z) - 1
		f := 0.0
		if y > 0 {
			f = 1 - math.Pow(1+StallXi*y/StallSigma, -1/StallXi)
		}
		s += w * f * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	}
	return (1-StallShare)*body + StallShare*s
}

// stallQuantile inverts stallCDF by bisection on log x.
func stallQuantile(p float64) float64 {
	lo, hi := math.Log(1e-6), math.Log(1e9)
	for range 200 {
		mid := (lo + hi) / 2
		if stallCDF(math.Exp(mid)) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2)
}
