package fuseschema

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"
)

// DecodeFuseCommand parses the JSON of a fuse command and validates it.
// It is strict: the top level and each target and reason object must have
// exactly the members of the canonical form, no member may repeat, member
// names match case-sensitively, "schema" must be FuseCommandSchema, there
// is nothing after the object, and the command must pass Validate. It
// does not require the canonical member order or spacing (signatures are
// checked over the canonical re-encoding of what was decoded). Empty
// arrays decode to nil slices.
//
// Errors wrap ErrTooLarge (more than MaxFuseCommandBytes), ErrMalformed
// (not JSON, wrong JSON type, unknown or repeated member) or ErrInvalid (a
// rule broken), and carry a FieldError naming the member.
func DecodeFuseCommand(b []byte) (FuseCommand, error) {
	var c FuseCommand
	if len(b) > MaxFuseCommandBytes {
		return c, FieldTooLarge("fuse_command", len(b), MaxFuseCommandBytes)
	}
	if !utf8.Valid(b) {
		return c, malformed("fuse_command", "not valid UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	seen := map[string]bool{}
	err := decodeObject(d, "", func(name string) error {
		if seen[name] {
			return malformed(name, "member repeated")
		}
		seen[name] = true
		switch name {
		case "schema":
			s, err := decodeString(d, name)
			if err == nil && s != FuseCommandSchema {
				err = invalid(name, "must be "+strconv.Quote(FuseCommandSchema)+", got "+strconv.Quote(s))
			}
			return err
		case "target":
			return decodeTarget(d, &c.Target)
		case "action":
			s, err := decodeString(d, name)
			c.Action = Action(s)
			return err
		case "level":
			n, err := decodeInt(d, name, 32)
			c.Level = int(n)
			return err
		case "state":
			s, err := decodeString(d, name)
			c.State = BreakerState(s)
			return err
		case "version":
			tok, err := decodeNumber(d, name)
			if err != nil {
				return err
			}
			c.Version, err = strconv.ParseUint(string(tok), 10, 64)
			if err != nil {
				return malformed(name, "not an unsigned 64-bit integer: "+string(tok))
			}
			return nil
		case "issued_at_unix_nano":
			var err error
			c.IssuedAtUnixNano, err = decodeInt(d, name, 64)
			return err
		case "expires_at_unix_nano":
			var err error
			c.ExpiresAtUnixNano, err = decodeInt(d, name, 64)
			return err
		case "fallback":
			var err error
			c.Fallback, err = decodeString(d, name)
			return err
		case "throttle_fraction":
			tok, err := decodeNumber(d, name)
			if err != nil {
				return err
			}
			c.ThrottleFraction, err = strconv.ParseFloat(string(tok), 64)
			if err != nil {
				return malformed(name, "not a float64: "+string(tok))
			}
			return nil
		case "reasons":
			return decodeArray(d, name, func(i int) error {
				var r Reason
				err := decodeReason(d, "reasons["+strconv.Itoa(i)+"]", &r)
				c.Reasons = append(c.Reasons, r)
				return err
			})
		case "correlation_ids":
			return decodeArray(d, name, func(i int) error {
				s, err := decodeString(d, "correlation_ids["+strconv.Itoa(i)+"]")
				c.CorrelationIDs = append(c.CorrelationIDs, s)
				return err
			})
		case "key_id":
			var err error
			c.KeyID, err = decodeString(d, name)
			return err
		case "signature":
			var err error
			c.Signature, err = decodeString(d, name)
			return err
		}
		return malformed(name, "unknown member")
	})
	if err != nil {
		return FuseCommand{}, err
	}
	if _, err := d.Token(); err != io.EOF {
		return FuseCommand{}, malformed("fuse_command", "data after the object")
	}
	for _, f := range FuseCommandFields {
		if !seen[f] {
			return FuseCommand{}, malformed(f, "member missing")
		}
	}
	if err := c.Validate(); err != nil {
		return FuseCommand{}, err
	}
	return c, nil
}

func decodeTarget(d *json.Decoder, k *Key) error {
	seen := map[string]bool{}
	err := decodeObject(d, "target", func(name string) error {
		field := "target." + name
		if seen[name] {
			return malformed(field, "member repeated")
		}
		seen[name] = true
		var dst *string
		switch name {
		case "tenant":
			dst = &k.Tenant
		case "service":
			dst = &k.Service
		case "model":
			dst = &k.Model
		case "variant":
			dst = &k.Variant
		default:
			return malformed(field, "unknown member")
		}
		var err error
		*dst, err = decodeString(d, field)
		return err
	})
	if err != nil {
		return err
	}
	for _, f := range Dimensions {
		if !seen[f] {
			return malformed("target."+f, "member missing")
		}
	}
	return nil
}

func decodeReason(d *json.Decoder, path string, r *Reason) error {
	seen := map[string]bool{}
	err := decodeObject(d, path, func(name string) error {
		field := path + "." + name
		if seen[name] {
			return malformed(field, "member repeated")
		}
		seen[name] = true
		var err error
		switch name {
		case "verdict_id":
			r.VerdictID, err = decodeString(d, field)
		case "text":
			r.Text, err = decodeString(d, field)
		default:
			return malformed(field, "unknown member")
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, f := range []string{"verdict_id", "text"} {
		if !seen[f] {
			return malformed(path+"."+f, "member missing")
		}
	}
	return nil
}

// decodeObject reads '{', calls member for each member name (the decoder
// then stands before its value, which member must consume), and reads '}'.
func decodeObject(d *json.Decoder, path string, member func(name string) error) error {
	field := path
	if field == "" {
		field = "fuse_command"
	}
	if err := expectDelim(d, field, '{', "an object"); err != nil {
		return err
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return malformed(field, "bad JSON: "+err.Error())
		}
		name, ok := tok.(string)
		if !ok {
			return malformed(field, "bad JSON: member name expected")
		}
		if err := member(name); err != nil {
			return err
		}
	}
	return expectDelim(d, field, '}', "the end of the object")
}

func decodeArray(d *json.Decoder, field string, elem func(i int) error) error {
	if err := expectDelim(d, field, '[', "an array"); err != nil {
		return err
	}
	for i := 0; d.More(); i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	return expectDelim(d, field, ']', "the end of the array")
}

func expectDelim(d *json.Decoder, field string, want json.Delim, what string) error {
	tok, err := d.Token()
	if err != nil {
		return malformed(field, "bad JSON: "+err.Error())
	}
	if got, ok := tok.(json.Delim); !ok || got != want {
		return malformed(field, "want "+what+", got "+tokenKind(tok))
	}
	return nil
}

func decodeString(d *json.Decoder, field string) (string, error) {
	tok, err := d.Token()
	if err != nil {
		return "", malformed(field, "bad JSON: "+err.Error())
	}
	s, ok := tok.(string)
	if !ok {
		return "", malformed(field, "want a string, got "+tokenKind(tok))
	}
	return s, nil
}

func decodeNumber(d *json.Decoder, field string) (json.Number, error) {
	tok, err := d.Token()
	if err != nil {
		return "", malformed(field, "bad JSON: "+err.Error())
	}
	n, ok := tok.(json.Number)
	if !ok {
		return "", malformed(field, "want a number, got "+tokenKind(tok))
	}
	return n, nil
}

func decodeInt(d *json.Decoder, field string, bits int) (int64, error) {
	tok, err := decodeNumber(d, field)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(tok), 10, bits)
	if err != nil {
		return 0, malformed(field, "not a "+strconv.Itoa(bits)+"-bit integer: "+string(tok))
	}
	return n, nil
}

func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return strconv.Quote(t.String())
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "something else"
}
