package sinks

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func goldenVerdict() schemas.Verdict {
	v := schemas.Verdict{
		Processor: "tail", SLO: "chat-latency", Metric: "duration_ms",
		Key:                 schemas.Key{Tenant: "acme", Service: "chat/api", Model: "gpt-x", Variant: "canary"},
		WindowStartUnixNano: 1741046400000000000, WindowEndUnixNano: 1741046700123456789,
		Value: 812.5, Threshold: 800, Lower: 790.125, Upper: 1e21, IntervalLevel: 0.95,
		Status: schemas.StatusWarn, Method: "gpd_mle_profile", N: 12000,
		Details: []schemas.Detail{{Name: "xi", Value: 0.12}, {Name: "sigma", Value: 31.5}, {Name: "u", Value: 640},
			{Name: "tiny", Value: 1.5e-9}, {Name: "neg", Value: -0.000001}},
		ConfigVersion: "v7 \"quoted\" <html> \u2028 \x01",
	}
	v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
	return v
}

func TestVerdictJSONGolden(t *testing.T) {
	v := goldenVerdict()
	got, err := MarshalVerdictJSON(nil, &v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "verdict.v1.json")
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got)+"\n" != string(want) {
		t.Errorf("encoding changed:\n got %s\nwant %s", got, want)
	}
	if !json.Valid(got) {
		t.Errorf("not valid JSON: %s", got)
	}
}

func TestVerdictJSONRoundTrip(t *testing.T) {
	v := goldenVerdict()
	b, err := MarshalVerdictJSON([]byte("prefix"), &v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:6]) != "prefix" {
		t.Fatalf("did not append to dst: %q", b[:6])
	}
	back, err := UnmarshalVerdictJSON(b[6:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, v)
	}
	// Numbers are written as encoding/json writes them.
	for _, f := range []float64{0, -0.0, 1, 0.1, 1e-7, 123456789.125, 1e20, 1e21, -3.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(f)
		if got := schemas.AppendJSONFloat(nil, f); string(got) != string(want) {
			t.Errorf("float %v: %s, want %s", f, got, want)
		}
	}
	// Strings decode back to themselves (invalid UTF-8 becomes U+FFFD).
	for _, s := range []string{"", "plain", "a\"b\\c", "\t\n\r\x00\x1f", "é ü 漢字 😀", "\u2028\u2029", "<&>"} {
		var back string
		if err := json.Unmarshal(schemas.AppendJSONString(nil, s), &back); err != nil || back != s {
			t.Errorf("string %q: decoded %q, %v", s, back, err)
		}
	}
	var back2 string
	if err := json.Unmarshal(schemas.AppendJSONString(nil, "a\xffb"), &back2); err != nil || back2 != "a\ufffdb" {
		t.Errorf("invalid UTF-8: decoded %q, %v", back2, err)
	}
}

func TestVerdictJSONErrors(t *testing.T) {
	v := goldenVerdict()
	v.Details[1].Value = math.Inf(1)
	if _, err := MarshalVerdictJSON(nil, &v); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("Marshal with an infinite detail: %v, want ErrInvalid", err)
	}
	for _, bad := range []string{`{"id":`, `[]`, `{"id":"x","processor":"p","status":"ok","details":{"a":"1"}}`, `{"id":"x","processor":"p","status":"ok","details":[1]}`} {
		if _, err := UnmarshalVerdictJSON([]byte(bad)); !errors.Is(err, schemas.ErrMalformed) {
			t.Errorf("Unmarshal(%s): %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := UnmarshalVerdictJSON([]byte(`{"id":"x","processor":"p","status":"maybe"}`)); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("Unmarshal with an unknown status: %v, want ErrInvalid", err)
	}
}

func TestVerdictRecordKey(t *testing.T) {
	v := goldenVerdict()
	if got, want := VerdictRecordKey(&v), "tail/acme/chat%2Fapi/gpt-x/canary"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Min: 100e6, Max: 1e9}
	for attempt, want := range []float64{100e6, 200e6, 400e6, 800e6, 1e9, 1e9} {
		for i := 0; i < 50; i++ {
			d := float64(b.Delay(attempt))
			if d < 0.8*want || d > 1.2*want {
				t.Fatalf("Delay(%d) = %v, want %v ±20%%", attempt, d, want)
			}
		}
	}
}
