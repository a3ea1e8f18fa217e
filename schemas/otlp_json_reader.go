package schemas

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonPlain marks the bytes a string may hold as they are: printable ASCII
// other than '"' and '\\'.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// maxJSONDepth bounds the nesting of objects and arrays the JSON reader
// accepts, so a hostile message cannot exhaust the stack.
const maxJSONDepth = 200

// jsonReader is a small pull reader over one JSON text (RFC 8259), shared by
// the OTLP/JSON and correction decoders. It validates as it goes (UTF-8,
// escapes, number grammar, nesting) and never allocates on the happy path:
// strings without escapes are returned as slices of the input, others are
// unescaped into a scratch buffer valid until the next string is read.
type jsonReader struct {
	b       []byte
	i       int
	depth   int
	scratch []byte
}

// jsonSyntaxError says what is wrong in a JSON text and where (byte offset).
type jsonSyntaxError struct {
	off    int
	reason string
}

func (e *jsonSyntaxError) Error() string {
	return e.reason + " at offset " + strconv.Itoa(e.off)
}

func (r *jsonReader) fail(reason string) error {
	return &jsonSyntaxError{off: r.i, reason: reason}
}

func (r *jsonReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end of input.
func (r *jsonReader) peek() byte {
	r.ws()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

// open consumes c ('{' or '[').
func (r *jsonReader) open(c byte) error {
	r.ws()
	if r.i >= len(r.b) {
		return r.fail("unexpected end of input")
	}
	if r.b[r.i] != c {
		if c == '{' {
			return r.fail("want an object, got " + r.what())
		}
		return r.fail("want an array, got " + r.what())
	}
	r.depth++
	if r.depth > maxJSONDepth {
		return r.fail("nested deeper than " + strconv.Itoa(maxJSONDepth))
	}
	r.i++
	return nil
}

// what describes the value starting at the next byte, for error messages.
func (r *jsonReader) what() string {
	switch r.peek() {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case 0:
		return "the end of input"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	return "an invalid character " + strconv.QuoteRune(rune(r.b[r.i]))
}

// more steps to the next member of the object or array opened last: it
// consumes the separating comma (unless first) and reports false when it
// consumes the closing byte instead.
func (r *jsonReader) more(first bool, close byte) (bool, error) {
	r.ws()
	if r.i >= len(r.b) {
		return false, r.fail("unexpected end of input")
	}
	if r.b[r.i] == close {
		r.i++
		r.depth--
		return false, nil
	}
	if !first {
		if r.b[r.i] != ',' {
			return false, r.fail("want ',' or " + strconv.QuoteRune(rune(close)) + ", got " + r.what())
		}
		r.i++
	}
	return true, nil
}

// member steps to the next member of the object opened last (more, as
// more(first, '}')) and reads its name and the colon after it (key). It
// reports more false, k nil, when it consumed the closing '}' instead.
func (r *jsonReader) member(first bool) (k []byte, more bool, err error) {
	if more, err = r.more(first, '}'); err != nil || !more {
		return nil, more, err
	}
	k, err = r.key()
	return k, true, err
}

// key reads an object member's name and the colon after it.
func (r *jsonReader) key() ([]byte, error) {
	k, _, err := r.str()
	if err != nil {
		return nil, err
	}
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != ':' {
		return nil, r.fail("want ':' after an object key")
	}
	r.i++
	return k, nil
}

// null consumes a null literal if one comes next.
func (r *jsonReader) null() bool {
	r.ws()
	if len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// str reads a string. The result aliases the input, or the scratch buffer
// when escaped is true.
func (r *jsonReader) str() (s []byte, escaped bool, err error) {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false, r.fail("want a string, got " + r.what())
	}
	start := r.i + 1
	for i := start; i < len(r.b); {
		for i < len(r.b) && jsonPlain[r.b[i]] {
			i++
		}
		if i >= len(r.b) {
			break
		}
		c := r.b[i]
		switch {
		case c == '"':
			r.i = i + 1
			return r.b[start:i], false, nil
		case c == '\\':
			s, err := r.strSlow(start, i)
			return s, true, err
		case c < 0x20:
			r.i = i
			return nil, false, r.fail("control character in string")
		case c >= utf8.RuneSelf:
			_, size := utf8.DecodeRune(r.b[i:])
			if size == 1 {
				r.i = i
				return nil, false, r.fail("invalid UTF-8 in string")
			}
			i += size
		default:
			i++
		}
	}
	r.i = len(r.b)
	return nil, false, r.fail("unterminated string")
}

// strSlow unescapes a string whose first escape is at esc.
func (r *jsonReader) strSlow(start, esc int) ([]byte, error) {
	buf := append(r.scratch[:0], r.b[start:esc]...)
	for i := esc; i < len(r.b); {
		c := r.b[i]
		switch {
		case c == '"':
			r.i = i + 1
			r.scratch = buf
			return buf, nil
		case c == '\\':
			if i+1 >= len(r.b) {
				r.i = i
				return nil, r.fail("unterminated string")
			}
			switch e := r.b[i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r1, ok := hex4(r.b[i+2:])
				if !ok {
					r.i = i
					return nil, r.fail("bad \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r1) {
					var r2 rune = -1
					if len(r.b)-i >= 6 && r.b[i] == '\\' && r.b[i+1] == 'u' {
						r2, ok = hex4(r.b[i+2:])
						if !ok {
							r2 = -1
						}
					}
					dec := utf16.DecodeRune(r1, r2)
					if dec == utf8.RuneError {
						r.i = i - 6
						return nil, r.fail("lone UTF-16 surrogate in \\u escape")
					}
					r1 = dec
					i += 6
				}
				buf = utf8.AppendRune(buf, r1)
				continue
			default:
				r.i = i
				return nil, r.fail("bad escape \\" + string(rune(e)))
			}
			i += 2
		case c < 0x20:
			r.i = i
			return nil, r.fail("control character in string")
		case c >= utf8.RuneSelf:
			_, size := utf8.DecodeRune(r.b[i:])
			if size == 1 {
				r.i = i
				return nil, r.fail("invalid UTF-8 in string")
			}
			buf = append(buf, r.b[i:i+size]...)
			i += size
		default:
			buf = append(buf, c)
			i++
		}
	}
	r.i = len(r.b)
	r.scratch = buf
	return nil, r.fail("unterminated string")
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// skipDigits returns the index of the first byte of b from i on that is not
// an ASCII digit (len(b) if there is none).
func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// number reads a number token, checked against the JSON grammar.
func (r *jsonReader) number() ([]byte, error) {
	r.ws()
	b, start, i := r.b, r.i, r.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return nil, r.fail("want a number, got " + r.what())
	}
	if i < len(b) && b[i] == '.' {
		d := i + 1
		if i = skipDigits(b, d); i == d {
			r.i = i
			return nil, r.fail("want a digit after the decimal point")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		if i = skipDigits(b, i); i == d {
			r.i = i
			return nil, r.fail("want a digit in the exponent")
		}
	}
	r.i = i
	return b[start:i], nil
}

// literal consumes the literal lit (true, false, null).
func (r *jsonReader) literal(lit string) error {
	r.ws()
	if len(r.b)-r.i >= len(lit) && string(r.b[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return nil
	}
	return r.fail("want " + lit + ", got " + r.what())
}

// boolean reads true or false.
func (r *jsonReader) boolean() (bool, error) {
	switch r.peek() {
	case 't':
		return true, r.literal("true")
	case 'f':
		return false, r.literal("false")
	}
	return false, r.fail("want a boolean, got " + r.what())
}

// skip reads and discards one value of any type, checking its syntax.
func (r *jsonReader) skip() error {
	switch r.peek() {
	case '{':
		if err := r.open('{'); err != nil {
			return err
		}
		for first := true; ; first = false {
			_, more, err := r.member(first)
			if err != nil || !more {
				return err
			}
			if err := r.skip(); err != nil {
				return err
			}
		}
	case '[':
		if err := r.open('['); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := r.more(first, ']')
			if err != nil || !more {
				return err
			}
			if err := r.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, _, err := r.str()
		return err
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case 'n':
		return r.literal("null")
	}
	_, err := r.number()
	return err
}

// end checks that only white space follows the top-level value.
func (r *jsonReader) end() error {
	r.ws()
	if r.i != len(r.b) {
		return r.fail("data after the top-level value")
	}
	return nil
}

// parseInt64 parses an optionally signed decimal integer without allocating.
func parseInt64(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	u, ok := parseUint64(b)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// parseUint64 parses an unsigned decimal integer without allocating.
func parseUint64(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (1<<64-1-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	return u, true
}
