package stats

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them (test with errors.Is) and says in its message which input or
// parameter is wrong and which limit it broke.
var (
	// ErrTooFewSamples: fewer observations than the method needs
	// (e.g. a GPD fit on fewer than MinGPDExceedances values, a slope on
	// fewer than 3 points, an empty sample).
	ErrTooFewSamples = errors.New("stats: too few samples")
	// ErrTooManySamples: more observations than a documented cap
	// (e.g. Theil–Sen above MaxTheilSenPoints).
	ErrTooManySamples = errors.New("stats: too many samples")
	// ErrDegenerate: the sample has no spread where the method needs one
	// (all values equal, all times equal), so the statistic is undefined.
	ErrDegenerate = errors.New("stats: degenerate sample")
	// ErrInvalidInput: a value is NaN or infinite, negative where it must
	// not be, or two inputs that must match in length do not.
	ErrInvalidInput = errors.New("stats: invalid input")
	// ErrInvalidParameter: a parameter is outside its domain
	// (a probability outside (0, 1), a non-positive scale, ...).
	ErrInvalidParameter = errors.New("stats: invalid parameter")
	// ErrNoConvergence: an iterative method did not reach its tolerance.
	ErrNoConvergence = errors.New("stats: no convergence")
)

// errf wraps a sentinel with a message naming what is wrong.
func errf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
