package jsonlsink_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
)

// What the JSONL sink writes, Read gives back; a half-written last
// line is left out, a broken line is an error that names it.
func TestJSONLRoundTrip(t *testing.T) {
	v := schemas.Verdict{
		Processor: "tail", SLO: "latency", Metric: "p999_duration_ms",
		Key:                 schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "canary"},
		WindowStartUnixNano: 1_800_000_000e9, WindowEndUnixNano: 1_800_000_600e9,
		Value: 2100.5, Threshold: 2000, Lower: 2050, Upper: 2300, IntervalLevel: 0.95,
		Status: schemas.StatusBreach, Method: "gpd_mle_profile", N: 12000,
		Details: []schemas.Detail{{Name: "xi", Value: 0.1}}, ConfigVersion: "v1",
	}
	v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
	c := schemas.FuseCommand{
		Target: v.Key, Action: schemas.ActionTrip, Level: 2, State: schemas.StateOpen,
		Version: 1 << 20, IssuedAtUnixNano: v.WindowEndUnixNano, ExpiresAtUnixNano: v.WindowEndUnixNano + 900e9,
		Reasons: []schemas.Reason{{VerdictID: v.ID, Text: "tail breach"}},
	}
	path := filepath.Join(t.TempDir(), "out.jsonl")
	sink, err := jsonlsink.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out := schemas.Output{Verdicts: []schemas.Verdict{v, v}, Commands: []schemas.FuseCommand{c}}
	if err := sink.Write(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vs, cs, err := jsonlsink.Read(append(data, `{"verdict":{"id":"half-writ`...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(vs, out.Verdicts) || !reflect.DeepEqual(cs, out.Commands) {
		t.Fatalf("read back\n%+v\n%+v\nwant\n%+v\n%+v", vs, cs, out.Verdicts, out.Commands)
	}
	_, _, err = jsonlsink.Read(append(data, "not json\n"...))
	if err == nil || !strings.Contains(err.Error(), "jsonl line 4") {
		t.Fatalf("a broken 4th line: error %v, want one naming line 4", err)
	}
}
