package jsonw

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendFloat appends f as encoding/json does: the shortest decimal that
// round-trips, in exponent form below 1e-6 and from 1e21 on (e-9, not
// e-09). f must be finite (the caller validated it); -0 is written "-0".
func AppendFloat(b []byte, f float64) []byte {
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

// AppendString appends s as a JSON string, the bytes encoding/json writes
// with HTML escaping off (json.Encoder.SetEscapeHTML(false)):
// '"' → \", '\' → \\, U+0008 → \b, U+000C → \f, U+000A → \n,
// U+000D → \r, U+0009 → \t, any other byte below 0x20 → \u00XX (lower-case
// hex), U+2028 and U+2029 → \u2028 and \u2029, each byte of invalid UTF-8
// → \ufffd; '<', '>', '&', DEL and all other characters as they are.
func AppendString(b []byte, s string) []byte { return appendString(b, s, &plain) }

// AppendHTMLString appends s as AppendString does but with HTML escaping on,
// as json.Marshal writes it: '<', '>' and '&' also become \u003c, \u003e
// and \u0026.
func AppendHTMLString(b []byte, s string) []byte { return appendString(b, s, &html) }

// plain and html say which ASCII bytes a JSON string holds as they are
// (true) rather than escaped, without and with HTML escaping.
var plain, html = safeSets()

func safeSets() (plain, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
		html[c] = plain[c] && c != '<' && c != '>' && c != '&'
	}
	return plain, html
}

// lowerHex is the digits of \u00XX escapes (lower case, as encoding/json).
const lowerHex = "0123456789abcdef"

func appendString(b []byte, s string, safe *[utf8.RuneSelf]bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
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
