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

// InvalidField returns an error for a record that decoded but broke a rule:
// errors.Is(err, ErrInvalid) holds, errors.As finds a *FieldError{field,
// reason}, and Error() is "invalid record: field: reason". Package schemas
// of the fusebox module builds its errors with these three functions, so
// that a fuse command's errors and every other record's are alike.
func InvalidField(field, reason string) error {
	return Wrap(ErrInvalid, &FieldError{Field: field, Reason: reason})
}

// MalformedField is InvalidField's counterpart for ErrMalformed: the bytes
// of the record could not be decoded at all.
func MalformedField(field, reason string) error {
	return Wrap(ErrMalformed, &FieldError{Field: field, Reason: reason})
}

// FieldTooLarge is InvalidField's counterpart for ErrTooLarge: field holds
// got units (bytes, items), over the limit of limit. The reason reads
// "<got> exceeds the limit of <limit>".
func FieldTooLarge(field string, got, limit int) error {
	return Wrap(ErrTooLarge, &FieldError{Field: field,
		Reason: strconv.Itoa(got) + " exceeds the limit of " + strconv.Itoa(limit)})
}

func invalid(field, reason string) error   { return InvalidField(field, reason) }
func malformed(field, reason string) error { return MalformedField(field, reason) }

// Wrap marks err with kind (ErrMalformed, ErrInvalid or ErrTooLarge):
// errors.Is matches kind and whatever err matches, errors.As finds err's
// *FieldError (or those of an errors.Join), and Error() is kind's text, ": ",
// then err's. InvalidField, MalformedField and FieldTooLarge are Wrap of one
// FieldError; package schemas uses Wrap for joined errors too.
func Wrap(kind, err error) error { return &wrapped{kind: kind, err: err} }

// wrapped lets errors.Is match the kind sentinel and errors.As find the
// FieldError while Error() prints only the field and reason.
type wrapped struct {
	kind error
	err  error
}

func (w *wrapped) Error() string   { return w.kind.Error() + ": " + w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.kind, w.err} }
