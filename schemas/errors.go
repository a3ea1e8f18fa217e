package schemas

import (
	"strconv"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// FieldError says which field of a record is wrong and why. Decoders and
// Validate methods return it (possibly wrapped, or several joined with
// errors.Join) so that a dead-letter header can name the field. It is
// fuseschema.FieldError, so that the fuse command's errors and this
// package's are one type.
type FieldError = fuseschema.FieldError

// The error kinds, the same values as fuseschema's (errors.Is matches a
// fuse command's errors and every other record's alike).
var (
	// ErrMalformed is wrapped by every error that means the bytes of a
	// record could not be decoded at all (truncated protobuf, broken JSON,
	// wrong wire type). Such a record is permanently bad: retrying cannot
	// help.
	ErrMalformed = fuseschema.ErrMalformed
	// ErrInvalid is wrapped by every error that means a record decoded but
	// broke a rule (negative duration, missing model, unknown correction
	// kind).
	ErrInvalid = fuseschema.ErrInvalid
	// ErrTooLarge is wrapped when a record exceeds a configured Limit.
	ErrTooLarge = fuseschema.ErrTooLarge
)

// invalid builds a FieldError wrapped in ErrInvalid.
func invalid(field, reason string) error {
	return &wrapped{kind: ErrInvalid, err: &FieldError{Field: field, Reason: reason}}
}

// malformed builds a FieldError wrapped in ErrMalformed.
func malformed(field, reason string) error {
	return &wrapped{kind: ErrMalformed, err: &FieldError{Field: field, Reason: reason}}
}

// tooLarge builds a FieldError wrapped in ErrTooLarge.
func tooLarge(field string, got, limit int) error {
	return &wrapped{kind: ErrTooLarge, err: &FieldError{Field: field,
		Reason: strconv.Itoa(got) + " exceeds the limit of " + strconv.Itoa(limit)}}
}

// wrapped lets errors.Is match the kind sentinel and errors.As find the
// FieldError while Error() prints only the field and reason.
type wrapped struct {
	kind error
	err  error
}

func (w *wrapped) Error() string   { return w.kind.Error() + ": " + w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.kind, w.err} }
