package fuseschema

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema/jsonw"
)

// The canonical JSON form of a FuseCommand (fusebox.fuse_command.v1), as
// written to the fuse topic, signed, and described by
// fuse_command.v1.schema.json (in this package). It is defined byte for byte:
//
//	{"schema":"fusebox.fuse_command.v1",
//	 "target":{"tenant":S,"service":S,"model":S,"variant":S},
//	 "action":S,"level":I,"state":S,"version":U,
//	 "issued_at_unix_nano":I,"expires_at_unix_nano":I,
//	 "fallback":S,"throttle_fraction":F,
//	 "reasons":[{"verdict_id":S,"text":S},...],
//	 "correlation_ids":[S,...],
//	 "key_id":S,"signature":S}
//
// (shown wrapped; the real form is one line). The rules:
//
//   - Members appear in exactly the order above, every member is always
//     present (empty strings, 0 and [] included), and there is no
//     whitespace anywhere outside strings: no space after ':' or ',', no
//     newline at the end.
//   - Integers (level, version, the two times) are decimal JSON numbers
//     with no sign for non-negative values, no leading zeros, no fraction
//     and no exponent; version is a uint64 and the times int64 Unix
//     nanoseconds, so a reader must parse them as 64-bit integers (they can
//     exceed 2^53).
//   - throttle_fraction is written as encoding/json writes a float64 (the
//     ECMAScript Number-to-String rule): the shortest decimal that parses
//     back to the same float64 (strconv 'f' with precision -1), switching
//     to exponent form ('e', precision -1, exponent without a leading zero,
//     e.g. 1e-7) when the magnitude is below 1e-6 or at least 1e21; 0 (and
//     -0) is written "0". It must be finite and in [0, 1].
//   - Strings are UTF-8 and escaped exactly as encoding/json.Marshal does
//     (Go 1.22 and later): '"' → \", '\' → \\, U+0008 → \b, U+000C → \f,
//     U+000A → \n, U+000D → \r, U+0009 → \t, any other byte below 0x20 →
//     \u00XX with lower-case hex, '<' → \u003c, '>' → \u003e, '&' →
//     \u0026, U+2028 → \u2028, U+2029 → \u2029; every other character,
//     DEL (0x7F) and all non-ASCII included, is written as its UTF-8 bytes.
//     A string that is not valid UTF-8 cannot be encoded (an error, never a
//     replacement character).
//   - Arrays keep the order of the Go slices; a nil slice is written [].
//
// The bytes a signature covers (CanonicalBytes) are this object without
// its last member: everything up to and including the key_id member, then
// '}'. Because signature is always last, a verifier that holds a record
// value written by fusebox can also obtain them by cutting the final
// `,"signature":"…"` member off the value. The signature itself (defined
// by package fuse) is lower-case hex of HMAC-SHA256 over those bytes with
// the key named by key_id, or "" for an unsigned command.

// FuseCommandSchema is the value of the "schema" member: the name and
// version of the canonical encoding.
const FuseCommandSchema = "fusebox.fuse_command.v1"

// MaxFuseCommandBytes bounds what DecodeFuseCommand accepts (1 MiB); a
// longer record is rejected with an error wrapping ErrTooLarge.
const MaxFuseCommandBytes = 1 << 20

// MaxFuseCommandLevel is the highest level a command may carry (trip).
const MaxFuseCommandLevel = 2

// FuseCommandFields lists the members of the canonical object in their
// order; the JSON Schema's properties agree with it (tested).
var FuseCommandFields = []string{
	"schema", "target", "action", "level", "state", "version",
	"issued_at_unix_nano", "expires_at_unix_nano", "fallback",
	"throttle_fraction", "reasons", "correlation_ids", "key_id", "signature",
}

// Actions lists every Action in the order of the JSON Schema's enum.
var Actions = []Action{ActionTrip, ActionHalfOpen, ActionClose, ActionDegrade, ActionThrottle, ActionRollback, ActionScaleOut}

// BreakerStates lists every BreakerState in the order of the JSON Schema's
// enum.
var BreakerStates = []BreakerState{StateClosed, StateOpen, StateHalfOpen}

// Valid reports whether a is one of Actions.
func (a Action) Valid() bool {
	for _, x := range Actions {
		if a == x {
			return true
		}
	}
	return false
}

// Valid reports whether s is one of BreakerStates.
func (s BreakerState) Valid() bool {
	for _, x := range BreakerStates {
		if s == x {
			return true
		}
	}
	return false
}

// Validate checks every rule of the canonical form that is not about
// bytes: known action and state, 0 <= level <= MaxFuseCommandLevel,
// version >= 1, expires after issued, throttle_fraction finite and in
// [0, 1], a fallback for degrade, at least one reason and each with a
// verdict id, valid UTF-8 everywhere, a key id of at most 64 characters
// from [A-Za-z0-9._-], a signature that is "" or 64 lower-case hex digits
// and only with a key id. Errors wrap ErrInvalid and name the field.
func (c *FuseCommand) Validate() error {
	if !c.Action.Valid() {
		return invalid("action", "unknown action "+strconv.Quote(string(c.Action)))
	}
	if !c.State.Valid() {
		return invalid("state", "unknown state "+strconv.Quote(string(c.State)))
	}
	if c.Level < 0 || c.Level > MaxFuseCommandLevel {
		return invalid("level", "must be in [0, "+strconv.Itoa(MaxFuseCommandLevel)+"], got "+strconv.Itoa(c.Level))
	}
	if c.Version == 0 {
		return invalid("version", "must be at least 1")
	}
	if c.ExpiresAtUnixNano <= c.IssuedAtUnixNano {
		return invalid("expires_at_unix_nano", "must be after issued_at_unix_nano")
	}
	if f := c.ThrottleFraction; math.IsNaN(f) || f < 0 || f > 1 {
		return invalid("throttle_fraction", "must be a number in [0, 1]")
	}
	if c.Action == ActionDegrade && c.Fallback == "" {
		return invalid("fallback", "required when action is degrade")
	}
	if len(c.Reasons) == 0 {
		return invalid("reasons", "at least one reason is required")
	}
	for _, s := range []struct{ field, v string }{
		{"target.tenant", c.Target.Tenant}, {"target.service", c.Target.Service},
		{"target.model", c.Target.Model}, {"target.variant", c.Target.Variant},
		{"fallback", c.Fallback},
	} {
		if !utf8.ValidString(s.v) {
			return invalid(s.field, "not valid UTF-8")
		}
	}
	for i, r := range c.Reasons {
		if r.VerdictID == "" {
			return invalid("reasons["+strconv.Itoa(i)+"].verdict_id", "must not be empty")
		}
		if !utf8.ValidString(r.VerdictID) {
			return invalid("reasons["+strconv.Itoa(i)+"].verdict_id", "not valid UTF-8")
		}
		if !utf8.ValidString(r.Text) {
			return invalid("reasons["+strconv.Itoa(i)+"].text", "not valid UTF-8")
		}
	}
	for i, id := range c.CorrelationIDs {
		if !utf8.ValidString(id) {
			return invalid("correlation_ids["+strconv.Itoa(i)+"]", "not valid UTF-8")
		}
	}
	if !ValidKeyID(c.KeyID) {
		return invalid("key_id", "must be at most 64 characters from [A-Za-z0-9._-]")
	}
	if c.Signature != "" {
		if c.KeyID == "" {
			return invalid("signature", "a signature needs a key_id")
		}
		if !lowerHex64(c.Signature) {
			return invalid("signature", "must be 64 lower-case hex digits (HMAC-SHA256)")
		}
	}
	return nil
}

// ValidKeyID reports whether s is a key_id the canonical form accepts: at
// most 64 characters from [A-Za-z0-9._-] ("" is valid: a command that names
// no key). Package fuse's key ring holds its key ids to the same rule.
func ValidKeyID(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

func lowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'f') {
			return false
		}
	}
	return true
}

// CanonicalBytes returns the bytes a signature covers: the canonical
// object without the "signature" member (key_id included, so the key a
// signature claims is itself signed). It fails when Validate does.
func (c *FuseCommand) CanonicalBytes() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b := c.appendCanonical(make([]byte, 0, 512))
	return append(b, '}'), nil
}

// AppendJSON appends the canonical form (with the signature member) to dst.
// It fails, appending nothing, when Validate does.
func (c *FuseCommand) AppendJSON(dst []byte) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, err
	}
	b := c.appendCanonical(dst)
	b = append(b, `,"signature":`...)
	b = appendCanonicalString(b, c.Signature)
	return append(b, '}'), nil
}

// MarshalJSON writes the canonical form, signature included.
func (c FuseCommand) MarshalJSON() ([]byte, error) {
	return c.AppendJSON(make([]byte, 0, 640))
}

// UnmarshalJSON decodes with DecodeFuseCommand's rules.
func (c *FuseCommand) UnmarshalJSON(b []byte) error {
	d, err := DecodeFuseCommand(b)
	if err != nil {
		return err
	}
	*c = d
	return nil
}

// appendCanonical writes the object up to and including the key_id member,
// without the closing brace. c must be valid.
func (c *FuseCommand) appendCanonical(b []byte) []byte {
	b = append(b, `{"schema":"`+FuseCommandSchema+`","target":{"tenant":`...)
	b = appendCanonicalString(b, c.Target.Tenant)
	b = append(b, `,"service":`...)
	b = appendCanonicalString(b, c.Target.Service)
	b = append(b, `,"model":`...)
	b = appendCanonicalString(b, c.Target.Model)
	b = append(b, `,"variant":`...)
	b = appendCanonicalString(b, c.Target.Variant)
	b = append(b, `},"action":`...)
	b = appendCanonicalString(b, string(c.Action))
	b = append(b, `,"level":`...)
	b = strconv.AppendInt(b, int64(c.Level), 10)
	b = append(b, `,"state":`...)
	b = appendCanonicalString(b, string(c.State))
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, c.Version, 10)
	b = append(b, `,"issued_at_unix_nano":`...)
	b = strconv.AppendInt(b, c.IssuedAtUnixNano, 10)
	b = append(b, `,"expires_at_unix_nano":`...)
	b = strconv.AppendInt(b, c.ExpiresAtUnixNano, 10)
	b = append(b, `,"fallback":`...)
	b = appendCanonicalString(b, c.Fallback)
	b = append(b, `,"throttle_fraction":`...)
	b = appendCanonicalFloat(b, c.ThrottleFraction)
	b = append(b, `,"reasons":[`...)
	for i, r := range c.Reasons {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"verdict_id":`...)
		b = appendCanonicalString(b, r.VerdictID)
		b = append(b, `,"text":`...)
		b = appendCanonicalString(b, r.Text)
		b = append(b, '}')
	}
	b = append(b, `],"correlation_ids":[`...)
	for i, id := range c.CorrelationIDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCanonicalString(b, id)
	}
	b = append(b, `],"key_id":`...)
	return appendCanonicalString(b, c.KeyID)
}

// appendCanonicalFloat writes f as encoding/json writes a float64, with -0
// written as 0. f must be finite.
func appendCanonicalFloat(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	return jsonw.AppendFloat(b, f)
}

// appendCanonicalString writes s quoted and escaped as encoding/json does
// with HTML escaping on. s must be valid UTF-8 (Validate checked it).
func appendCanonicalString(b []byte, s string) []byte { return jsonw.AppendHTMLString(b, s) }
