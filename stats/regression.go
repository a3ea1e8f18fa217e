package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// OLSResult is an ordinary least-squares line y = Intercept + Slope*t.
// Slope is in y-units per t-unit; StdErr is the standard error of Slope
// assuming independent normal residuals.
type OLSResult struct {
	Slope, Intercept float64
	StdErr           float64 // of Slope
	InterceptStdErr  float64
	R                float64 // Pearson correlation, in [-1, 1]
	// P is the two-sided p-value of "Slope = 0" from Student's t with n-2
	// degrees of freedom, in [0, 1].
	P float64
	N int
}

// OLS fits y on t by least squares, matching scipy.stats.linregress(t, y):
//
//	Slope = Sxy/Sxx, Intercept = mean(y) - Slope*mean(t),
//	r = Sxy/sqrt(Sxx*Syy), T = r*sqrt((n-2)/((1-r+1e-20)(1+r+1e-20))),
//	StdErr = sqrt((1-r^2)*Syy/Sxx/(n-2)),  P = 2*P(T_{n-2} > |T|).
//
// When every y is equal the fit is exact: Slope 0, StdErr 0, R 0, P 1.
// Errors: fewer than 3 points (ErrTooFewSamples), unequal lengths or
// non-finite values (ErrInvalidInput), all t equal (ErrDegenerate).
func OLS(t, y []float64) (OLSResult, error) {
	n := len(t)
	if n != len(y) {
		return OLSResult{}, errf(ErrInvalidInput, "OLS: %d times but %d values", n, len(y))
	}
	if n < 3 {
		return OLSResult{}, errf(ErrTooFewSamples, "OLS needs at least 3 points, got %d", n)
	}
	if err := checkFinite("t", t); err != nil {
		return OLSResult{}, err
	}
	if err := checkFinite("y", y); err != nil {
		return OLSResult{}, err
	}
	fn := float64(n)
	xm, ym := mean(t), mean(y)
	var sxx, syy, sxy float64
	for i := range t {
		dx, dy := t[i]-xm, y[i]-ym
		sxx += dx * dx
		syy += dy * dy
		sxy += dx * dy
	}
	sxx /= fn
	syy /= fn
	sxy /= fn
	if sxx == 0 {
		return OLSResult{}, errf(ErrDegenerate, "OLS: all %d times are equal, the slope is undefined", n)
	}
	res := OLSResult{N: n, Slope: sxy / sxx}
	res.Intercept = ym - res.Slope*xm
	if syy == 0 {
		res.P = 1
		return res, nil
	}
	r := min(max(sxy/math.Sqrt(sxx*syy), -1), 1)
	res.R = r
	df := fn - 2
	const tiny = 1e-20
	tstat := r * math.Sqrt(df/((1-r+tiny)*(1+r+tiny)))
	res.P = studentTwoSided(tstat, df)
	res.StdErr = math.Sqrt((1 - r*r) * syy / sxx / df)
	res.InterceptStdErr = res.StdErr * math.Sqrt(sxx+xm*xm)
	return res, nil
}

// LogLinear fits log(y) = a + b*t by OLS: the exponential model
// y = exp(a) * exp(b*t), whose decay rate is lambda = -b per t-unit. All y
// must be > 0 (else ErrInvalidInput); other errors as OLS.
func LogLinear(t, y []float64) (OLSResult, error) {
	ly := make([]float64, len(y))
	for i, v := range y {
		if !(v > 0) || math.IsInf(v, 0) {
			return OLSResult{}, errf(ErrInvalidInput, "LogLinear: y[%d]=%v must be finite and > 0", i, v)
		}
		ly[i] = math.Log(v)
	}
	return OLS(t, ly)
}

// studentTwoSided returns 2*P(T_df > |t|) = I_{df/(df+t^2)}(df/2, 1/2).
func studentTwoSided(t, df float64) float64 {
	if math.IsInf(t, 0) {
		return 0
	}
	x := df / (df + t*t)
	return clamp01(mathext.RegIncBeta(df/2, 0.5, x))
}

// MaxTheilSenPoints caps TheilSen: it holds all n(n-1)/2 pairwise slopes
// (about 16 MB at the cap). Aggregate longer series (e.g. per-minute means)
// before fitting.
const MaxTheilSenPoints = 2000

// TheilSenResult is the Theil–Sen line y = Intercept + Slope*t with the
// level confidence interval [Low, High] of Slope, in y-units per t-unit.
type TheilSenResult struct {
	Slope, Intercept float64
	Low, High        float64
	N                int
}

// TheilSen fits the Theil–Sen line, matching scipy.stats.theilslopes(y, t,
// alpha=level, method='separate'): Slope is the median of the slopes
// (y_j-y_i)/(t_j-t_i) over pairs with t_i != t_j; Intercept is
// median(y) - Slope*median(t); the bounds are the order statistics of the
// slopes at ranks round((N_s + z*s)/2) - 1 and round((N_s - z*s)/2)
// (0-based), with z = Phi^-1((1-level)/2), N_s the number of slopes and
// s^2 = (n(n-1)(2n+5) - sum over tie groups of t and y of k(k-1)(2k+5))/18
// (Sen 1968, eq. 2.6). Medians are type-7.
//
// Errors: fewer than 3 points (ErrTooFewSamples), more than
// MaxTheilSenPoints (ErrTooManySamples), unequal lengths or non-finite
// values (ErrInvalidInput), level outside (0, 1) (ErrInvalidParameter),
// all t equal or a negative variance from ties (ErrDegenerate).
func TheilSen(t, y []float64, level float64) (TheilSenResult, error) {
	n := len(t)
	switch {
	case n != len(y):
		return TheilSenResult{}, errf(ErrInvalidInput, "Theil–Sen: %d times but %d values", n, len(y))
	case n < 3:
		return TheilSenResult{}, errf(ErrTooFewSamples, "Theil–Sen needs at least 3 points, got %d", n)
	case n > MaxTheilSenPoints:
		return TheilSenResult{}, errf(ErrTooManySamples, "Theil–Sen on %d points exceeds MaxTheilSenPoints=%d", n, MaxTheilSenPoints)
	case !(level > 0 && level < 1):
		return TheilSenResult{}, errf(ErrInvalidParameter, "Theil–Sen level=%v: must be in (0, 1)", level)
	}
	if err := checkFinite("t", t); err != nil {
		return TheilSenResult{}, err
	}
	if err := checkFinite("y", y); err != nil {
		return TheilSenResult{}, err
	}
	// The number of slopes: pairs with t_i != t_j.
	tiedT, termT := ties(t)
	nt := n*(n-1)/2 - tiedT
	if nt == 0 {
		return TheilSenResult{}, errf(ErrDegenerate, "Theil–Sen: all %d times are equal, the slope is undefined", n)
	}
	alpha := level
	if alpha > 0.5 {
		alpha = 1 - alpha
	}
	z := distuv.UnitNormal.Quantile(alpha / 2)
	fn := float64(n)
	_, termY := ties(y)
	sigsq := (fn*(fn-1)*(2*fn+5) - termT - termY) / 18
	if sigsq < 0 {
		return TheilSenResult{}, errf(ErrDegenerate, "Theil–Sen: ties leave a negative variance for the slope bounds")
	}
	sigma := math.Sqrt(sigsq)
	fnt := float64(nt)
	ru := min(int(math.RoundToEven((fnt-z*sigma)/2)), nt-1)
	rl := max(int(math.RoundToEven((fnt+z*sigma)/2))-1, 0)

	res := TheilSenResult{N: n}
	o, ok := theilSenOrder{}, false
	if nt >= slopeBracketMin {
		o, _, ok = slopeBracket(t, y, nt, rl, ru, slopeSampleSize, slopeSampleMargin, nil)
	}
	if !ok {
		o = slopeOrderAll(t, y, nt, rl, ru)
	}
	res.Slope, res.Low, res.High = o.median, o.low, o.high
	ts := slices.Clone(t)
	ys := slices.Clone(y)
	res.Intercept = medianSelect(ys) - res.Slope*medianSelect(ts)
	return res, nil
}

// slopeOrderAll is slopeBracket's result from all nt slopes, held and
// selected among.
func slopeOrderAll(t, y []float64, nt, rl, ru int) theilSenOrder {
	n := len(t)
	slopes := make([]float64, 0, nt)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if dx := t[i] - t[j]; dx != 0 {
				slopes = append(slopes, (y[i]-y[j])/dx)
			}
		}
	}
	var o theilSenOrder
	o.median = medianSelect(slopes)
	// medianSelect left slopes partitioned around k = (nt-1)/2; the bounds
	// are further order statistics, each selected in its half only.
	o.low = kthSelectPartitioned(slopes, (nt-1)/2, rl)
	o.high = kthSelectPartitioned(slopes, (nt-1)/2, ru)
	return o
}

// ties returns, over the groups of equal values of v, the number of tied
// pairs (sum of k(k-1)/2) and sum of k(k-1)(2k+5).
func ties(v []float64) (pairs int, term float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j] == s[i] {
			j++
		}
		k := j - i
		pairs += k * (k - 1) / 2
		fk := float64(k)
		term += fk * (fk - 1) * (2*fk + 5)
		i = j
	}
	return pairs, term
}

// medianSelect returns the type-7 median of a (reordered in place).
func medianSelect(a []float64) float64 {
	n := len(a)
	k := (n - 1) / 2
	selectK(a, k)
	lo := a[k]
	if n%2 == 1 {
		return lo
	}
	hi := slices.Min(a[k+1:])
	return lo + 0.5*(hi-lo)
}

// kthSelectPartitioned is kthSelect(a, k) for an a already partitioned
// around m (a[:m] <= a[m] <= a[m+1:], as selectK(a, m) leaves it): it
// selects within the side holding k, and keeps the partition around m.
func kthSelectPartitioned(a []float64, m, k int) float64 {
	switch {
	case k < m:
		return kthSelect(a[:m], k)
	case k > m:
		return kthSelect(a[m+1:], k-m-1)
	}
	return a[m]
}

// kthSelect returns the k-th smallest (0-based) of a (reordered in place).
func kthSelect(a []float64, k int) float64 {
	selectK(a, k)
	return a[k]
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func checkFinite(name string, x []float64) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errf(ErrInvalidInput, "%s[%d]=%v: must be finite", name, i, v)
		}
	}
	return nil
}
