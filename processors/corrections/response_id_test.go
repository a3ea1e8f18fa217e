package corrections

import (
	"os"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

func responseCfg() Config {
	cfg := DefaultConfig()
	cfg.Window, cfg.Every, cfg.JoinWindow, cfg.MinResponses = 2*time.Minute, time.Minute, 5*time.Minute, 1
	return cfg
}

// TestJoinByResponseID joins a correction without a trace id (an
// evaluation event that could only name gen_ai.response.id) to the span
// with that response id, of the same tenant; the trace id still wins when
// both are given, and an unknown response id joins nothing.
func TestJoinByResponseID(t *testing.T) {
	p := mustNew(t, responseCfg())
	a := schemas.Key{Tenant: "acme", Service: "bot", Model: "m", Variant: "b"}
	o := schemas.Key{Tenant: "other", Service: "bot", Model: "m", Variant: "b"}
	t0 := int64(1000) * int64(time.Minute)
	spans := []schemas.Span{
		{Key: a, ResponseID: "r-1", StartUnixNano: t0, EndUnixNano: t0 + 1e6},                                    // no trace, no session
		{Key: a, ResponseID: "r-2", TraceID: schemas.TraceID{7}, StartUnixNano: t0 + 1e9, EndUnixNano: t0 + 2e9}, // both
		{Key: o, ResponseID: "r-1", StartUnixNano: t0, EndUnixNano: t0 + 1e6},                                    // another tenant's r-1
	}
	proctest.ObserveAll(p, spans)
	for i, c := range []schemas.Correction{
		{EventID: "e1", Tenant: "acme", ResponseID: "r-1"},
		{EventID: "e2", Tenant: "acme", ResponseID: "r-404"},
		{EventID: "e3", Tenant: "acme", TraceID: schemas.TraceID{7}, ResponseID: "r-1"}, // the trace wins: joins span 2
	} {
		c.SchemaVersion, c.Kind, c.TimeUnixNano = 1, schemas.KindThumbsDown, t0+int64(10+i)*1e9
		p.ObserveCorrection(&c)
	}
	var out proctest.Collector
	p.Evaluate(t0+int64(time.Minute), &out)
	joined := p.TakeJoined()
	if len(joined) != 3 {
		t.Fatalf("%d attributed corrections, want 3", len(joined))
	}
	var onA, unjoined int
	for _, j := range joined {
		switch j.Key {
		case a:
			onA++
		case schemas.Key{Tenant: "acme"}:
			unjoined++
		default:
			t.Fatalf("attributed to %v", j.Key)
		}
	}
	if onA != 2 || unjoined != 1 {
		t.Fatalf("%d joined to acme's spans, %d unjoined; want 2 and 1", onA, unjoined)
	}
	v := find(out.Verdicts, a, MetricRate)
	if v == nil || v.Value != 1 { // both of acme's spans corrected, once each
		t.Fatalf("acme rate verdict %+v", v)
	}
	// The state with response ids survives a snapshot.
	b, _ := p.MarshalBinary()
	q := mustNew(t, responseCfg())
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if again, _ := q.MarshalBinary(); string(again) != string(b) {
		t.Fatal("snapshot does not round-trip")
	}
}

// TestReadsVersion2Snapshot restores a snapshot of the build before
// response ids (testdata/corrections_v2.snap: four spans of acme with trace
// ids 1..4, and a pending correction of trace 2) and evaluates it.
func TestReadsVersion2Snapshot(t *testing.T) {
	b, err := os.ReadFile("testdata/corrections_v2.snap")
	if err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, responseCfg())
	if err := p.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if n, _, pend := p.IndexStats(); n != 4 || pend != 1 {
		t.Fatalf("indexed %d, pending %d; want 4 and 1", n, pend)
	}
	t0 := int64(1000) * int64(time.Minute)
	var out proctest.Collector
	p.Evaluate(t0+int64(time.Minute), &out)
	k := schemas.Key{Tenant: "acme", Service: "bot", Model: "m", Variant: "b"}
	if v := find(out.Verdicts, k, MetricRate); v == nil || v.Value != 0.25 {
		t.Fatalf("rate verdict %+v, want 1 of 4", v)
	}
}
