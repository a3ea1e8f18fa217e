package stats

import "math"

// POTQuantile returns the peaks-over-threshold estimate of the p-quantile:
// with threshold u, nExc of nTotal values above it (exceedance rate
// zeta = nExc/nTotal) and a GPD(xi, sigma) fitted to the exceedances,
//
//	x_p = u + sigma/xi * ((zeta/(1-p))^xi - 1)   (xi != 0)
//	x_p = u + sigma * log(zeta/(1-p))            (xi == 0)
//
// computed as u + sigma*L*expm1(xi*L)/(xi*L) with L = log(zeta/(1-p)), which
// is continuous in xi through 0. The result is in the unit of u and sigma.
//
// Errors (ErrInvalidParameter): p outside (0, 1), sigma <= 0, non-finite u
// or xi, nExc outside [1, nTotal], or 1-p >= zeta (the quantile is not
// above the threshold, so the tail model does not describe it: use the
// empirical quantile).
func POTQuantile(u, xi, sigma float64, nExc, nTotal int, p float64) (float64, error) {
	L, err := potLogRatio(nExc, nTotal, p)
	if err != nil {
		return 0, err
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) || math.IsNaN(xi) || math.IsInf(xi, 0) || math.IsNaN(u) || math.IsInf(u, 0) {
		return 0, errf(ErrInvalidParameter, "POT quantile with u=%v xi=%v sigma=%v: need finite values and sigma > 0", u, xi, sigma)
	}
	return u + sigma*L*expm1x(xi*L), nil
}

// potLogRatio returns L = log(zeta/(1-p)) > 0.
func potLogRatio(nExc, nTotal int, p float64) (float64, error) {
	if !(p > 0 && p < 1) {
		return 0, errf(ErrInvalidParameter, "quantile level p=%v: must be in (0, 1)", p)
	}
	if nExc < 1 || nTotal < nExc {
		return 0, errf(ErrInvalidParameter, "exceedance count %d of %d values: need 1 <= nExc <= nTotal", nExc, nTotal)
	}
	zeta := float64(nExc) / float64(nTotal)
	if 1-p >= zeta {
		return 0, errf(ErrInvalidParameter, "p=%v is not above the threshold: 1-p=%v >= exceedance rate %v", p, 1-p, zeta)
	}
	return math.Log(zeta) - math.Log1p(-p), nil
}

// expm1x returns expm1(z)/z, 1 at z = 0.
func expm1x(z float64) float64 {
	if math.Abs(z) < 1e-5 {
		return 1 + z/2 + z*z/6
	}
	return math.Expm1(z) / z
}

// expm1xPrime returns the derivative of expm1(z)/z: (z*e^z - expm1(z))/z^2,
// 1/2 at z = 0.
func expm1xPrime(z float64) float64 {
	if math.Abs(z) < 1e-3 {
		return 0.5 + z/3 + z*z/8 + z*z*z/30
	}
	return (z*math.Exp(z) - math.Expm1(z)) / (z * z)
}
