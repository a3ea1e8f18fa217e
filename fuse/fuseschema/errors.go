package fuseschema

import (
	"errors"
	"strconv"
)

// FieldError says which field of a record is wrong and why. Decoders and
// Validate methods return it (possibly wrapped, or several joined with
// errors.Join) so that a dead-letter header can name the field.
type FieldError struct {
	// Field is the path of the offending field, e.g. "spans[3].end_time" or
	// "trace_id".
	Field string
	// Reason says what is wrong, in words an operator can act on.
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// ErrMalformed is wrapped by every error that means the bytes of a record
// could not be decoded at all (truncated protobuf, broken JSON, wrong wire
// type). Such a record is permanently bad: retrying cannot help.
var ErrMalformed = errors.New("malformed record")

// ErrInvalid is wrapped by every error that means a record decoded but broke
// a rule (negative duration, missing model, unknown correction kind).
var ErrInvalid = errors.New("invalid record")

// ErrTooLarge is wrapped when a record exceeds a configured Limit.
var ErrTooLarge = errors.New("record exceeds limit")

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
