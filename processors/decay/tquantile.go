package decay

import "gonum.org/v1/gonum/stat/distuv"

// studentT975 is the 0.975 quantile of Student's t with df degrees of
// freedom (df >= 1): the half-width factor of a 95% interval on an OLS
// slope. Package stats has no exported t quantile yet, so this one comes
// from gonum (which stats uses underneath).
func studentT975(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
}
