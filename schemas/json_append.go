package schemas

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The JSON writers of the encoders that do not go through encoding/json
// (the verdict sink, the OTLP JSON and correction encoders, and the fuse
// command's canonical form for its numbers): the bytes encoding/json writes
// with HTML escaping off, without reflection or allocation.

const lowerHex = "0123456789abcdef"

// AppendJSONFloat appends f as encoding/json does: the shortest decimal that
// round-trips, in exponent form below 1e-6 and from 1e21 on. f is finite
// (the caller validated it).
func AppendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Turn e-09 into e-9, as encoding/json does.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendJSONString appends s as a JSON string, the bytes encoding/json
// writes with HTML escaping off (json.Encoder.SetEscapeHTML(false)):
// '"' → \", '\' → \\, U+0008 → \b, U+000C → \f, U+000A → \n,
// U+000D → \r, U+0009 → \t, any other byte below 0x20 → \u00XX (lower-case
// hex), U+2028 and U+2029 → \u2028 and \u2029, each byte of invalid UTF-8
// → \ufffd; '<', '>', '&', DEL and all other characters as they are.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', lowerHex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
