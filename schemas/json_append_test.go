package schemas

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// stdJSON is what encoding/json writes for v with HTML escaping off.
func stdJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// TestAppendJSONStringIsEncodingJSON: the same bytes as encoding/json for
// every one- and two-byte string (all controls, \b and \f included,
// quotes, backslashes, invalid UTF-8), for U+2028/U+2029 and HTML
// characters, and for random strings over an alphabet of awkward pieces.
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	check := func(s string) {
		if got, want := string(AppendJSONString(nil, s)), stdJSON(t, s); got != want {
			t.Fatalf("AppendJSONString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
	for a := 0; a < 256; a++ {
		check(string([]byte{byte(a)}))
		for b := 0; b < 256; b++ {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	pieces := []string{"a", "é", "\u2028", "\u2029", "<", ">", "&", "\b", "\f", "\x00", "\x1f", "\x7f", "\"", "\\", "\xff", "\xe2\x80", "😀", "\ufffd", " "}
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var s []byte
		for range r.IntN(12) {
			s = append(s, pieces[r.IntN(len(pieces))]...)
		}
		check(string(s))
	}
}

// TestAppendJSONFloatIsEncodingJSON: the same bytes as encoding/json for
// finite floats around the exponent-form boundaries and at random.
func TestAppendJSONFloatIsEncodingJSON(t *testing.T) {
	fs := []float64{0, 1, -1, 0.1, 1e-6, 9.999999e-7, 1e-7, 1e20, 1e21, 123456789012345680000, 5e-324, math.MaxFloat64, -1e-9, 2.5e-10}
	r := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		fs = append(fs, math.Float64frombits(r.Uint64()))
	}
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		if got, want := string(AppendJSONFloat(nil, f)), stdJSON(t, f); got != want {
			t.Fatalf("AppendJSONFloat(%s) = %s, encoding/json writes %s", strconv.FormatFloat(f, 'g', -1, 64), got, want)
		}
	}
}
