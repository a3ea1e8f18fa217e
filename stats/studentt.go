package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// StudentTQuantile is the q-quantile of Student's t distribution with df
// degrees of freedom: the t such that P(T <= t) = q. For a two-sided
// interval at level L use q = (1+L)/2 (1.96 for df → ∞ and L = 0.95).
//
// It returns ErrInvalidParameter when q is not in (0, 1) or df is not a
// positive finite number.
func StudentTQuantile(q, df float64) (float64, error) {
	if !(q > 0 && q < 1) {
		return 0, errf(ErrInvalidParameter, "Student t quantile q=%v: must be in (0, 1)", q)
	}
	if !(df > 0) || math.IsInf(df, 0) {
		return 0, errf(ErrInvalidParameter, "Student t degrees of freedom %v: must be positive and finite", df)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(q), nil
}
