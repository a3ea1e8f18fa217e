package stats

import "math"

// EWMA is an exponentially weighted moving average
//
//	v_1 = x_1,  v_k = Alpha*x_k + (1-Alpha)*v_{k-1},
//
// Alpha in (0, 1] being the weight of the newest value (the weight of a
// value halves every log(2)/-log(1-Alpha) updates). The exported fields are
// its whole state.
type EWMA struct {
	Alpha float64
	Value float64 // meaningful only when N > 0
	N     int64   // values added
}

// NewEWMA returns an empty EWMA. Errors: alpha outside (0, 1]
// (ErrInvalidParameter).
func NewEWMA(alpha float64) (EWMA, error) {
	if !(alpha > 0 && alpha <= 1) {
		return EWMA{}, errf(ErrInvalidParameter, "EWMA alpha=%v: must be in (0, 1]", alpha)
	}
	return EWMA{Alpha: alpha}, nil
}

// EWMAHalfLife returns the Alpha whose weights halve every h updates (h > 0).
func EWMAHalfLife(h float64) (float64, error) {
	if !(h > 0) || math.IsInf(h, 0) {
		return 0, errf(ErrInvalidParameter, "EWMA half-life %v: must be finite and > 0", h)
	}
	return -math.Expm1(-math.Ln2 / h), nil
}

// Add includes x; a NaN or infinite x is ignored and reported false.
func (e *EWMA) Add(x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	e.N++
	if e.N == 1 {
		e.Value = x
		return true
	}
	e.Value += e.Alpha * (x - e.Value)
	return true
}

// Get returns the average; ok is false before the first value.
func (e EWMA) Get() (float64, bool) {
	return e.Value, e.N > 0
}
