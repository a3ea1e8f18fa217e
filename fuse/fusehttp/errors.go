package fusehttp

import "errors"

var (
	// ErrNoDecider is returned by New without a Decider (a *fuse.Client).
	ErrNoDecider = errors.New("fusehttp: no decider (give the *fuse.Client)")
	// ErrInvalidOption is wrapped by New's errors for an option with a bad
	// value; the message names the option.
	ErrInvalidOption = errors.New("fusehttp: invalid option")
	// ErrNoModel is what the default key extraction reports (and the
	// middleware counts as DecisionUnkeyed) when neither the model header
	// nor the body's "model" gives a model.
	ErrNoModel = errors.New("fusehttp: request names no model")
)
