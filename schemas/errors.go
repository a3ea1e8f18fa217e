package schemas

import "github.com/fusebox-dev/fusebox/fuse/fuseschema"

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

// The error builders are fuseschema's (Wrap, InvalidField, MalformedField,
// FieldTooLarge), so that this package's errors are built as the fuse
// command's are.

// wrap marks err with kind (ErrMalformed, ErrInvalid or ErrTooLarge); see
// fuseschema.Wrap.
func wrap(kind, err error) error { return fuseschema.Wrap(kind, err) }

// invalid returns a FieldError wrapped in ErrInvalid.
func invalid(field, reason string) error { return fuseschema.InvalidField(field, reason) }

// malformed returns a FieldError wrapped in ErrMalformed.
func malformed(field, reason string) error { return fuseschema.MalformedField(field, reason) }

// tooLarge returns a FieldError wrapped in ErrTooLarge: got exceeds limit.
func tooLarge(field string, got, limit int) error { return fuseschema.FieldTooLarge(field, got, limit) }
