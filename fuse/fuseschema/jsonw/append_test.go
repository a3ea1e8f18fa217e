package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// The writers must give encoding/json's bytes: AppendString those of an
// Encoder with SetEscapeHTML(false), AppendHTMLString those of json.Marshal.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", `q"b\s`, "\b\f\n\r\t\x00\x1f\x7f", "<a href=x>&amp;</a>",
		"é€😀", "\u2028\u2029", "bad\xffutf8\xc3", "mixed <\n\u2028> \xfe end"}
	for c := 0; c < 256; c++ {
		strs = append(strs, string([]byte{'a', byte(c), 'z'}))
	}
	for _, s := range strs {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendHTMLString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendHTMLString(%q) = %s, want %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-6, 9.99e-7, 1e-9, 1.5e-300,
		1e20, 1e21, 123456789e13, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.30000000000000004} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat(nil, f); !bytes.Equal(got, want) {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}
