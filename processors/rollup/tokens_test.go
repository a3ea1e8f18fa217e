package rollup

import (
	"os"
	"testing"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestTokenKindsAndTPOT sums the cache and reasoning counts of the spans
// that have them and samples TPOT only from spans that have one.
func TestTokenKindsAndTPOT(t *testing.T) {
	k := schemas.Key{Tenant: "t", Service: "s", Model: "m"}
	t0 := int64(1000) * Minute
	mk := func(i int64, has schemas.Fields, out int64, stream bool) schemas.Span {
		s := schemas.Span{Key: k, StartUnixNano: t0 + i*1e9, EndUnixNano: t0 + i*1e9 + 1100e6, // 1100 ms
			OutputTokens: out, TTFTMs: 100, CacheReadTokens: 7, CacheWriteTokens: 3, ReasoningTokens: 40, Stream: stream,
			Has: schemas.HasOutputTokens | schemas.HasTTFT | has, SpanID: schemas.SpanID{byte(i)}}
		s.Derive()
		return s
	}
	all := schemas.HasCacheReadTokens | schemas.HasCacheWriteTokens | schemas.HasReasoningTokens
	xs := []schemas.Span{
		mk(0, all, 11, true),                       // TPOT (1100-100)/10 = 100
		mk(1, schemas.HasCacheReadTokens, 1, true), // one token: no TPOT
		mk(2, schemas.HasStream, 21, false),        // not streamed: no TPOT
		mk(3, schemas.HasStream|all, 6, true),      // TPOT 1000/5 = 200
	}
	p, _ := New(Config{MaxSamplesPerMinute: 100})
	proctest.ObserveAll(p, xs)
	var out proctest.Collector
	p.Evaluate(t0+Minute, &out)
	if len(out.Rollups) != 1 {
		t.Fatalf("%d rows", len(out.Rollups))
	}
	r := out.Rollups[0]
	if r.CacheReadTokens != 21 || r.CacheWriteTokens != 6 || r.ReasoningTokens != 80 {
		t.Fatalf("cache read %d, write %d, reasoning %d; want 21, 6, 80", r.CacheReadTokens, r.CacheWriteTokens, r.ReasoningTokens)
	}
	if len(r.TPOTsMs) != 2 || r.TPOTsMs[0]+r.TPOTsMs[1] != 300 {
		t.Fatalf("TPOTs %v, want 100 and 200", r.TPOTsMs)
	}
}

// TestReadsVersion2Snapshot restores a snapshot written by the build before
// the token kinds (testdata/rollup_v2.snap: three spans of one key in minute
// 1000, 10 input and 5 output tokens each) and closes its minute.
func TestReadsVersion2Snapshot(t *testing.T) {
	b, err := os.ReadFile("testdata/rollup_v2.snap")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := New(Config{MaxSamplesPerMinute: 10})
	if err := p.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	k := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}
	s := schemas.Span{Key: k, StartUnixNano: 1000*Minute + 5e9, EndUnixNano: 1000*Minute + 5e9 + 11e6, OutputTokens: 11, TTFTMs: 1,
		ReasoningTokens: 4, Has: schemas.HasOutputTokens | schemas.HasTTFT | schemas.HasReasoningTokens}
	s.Derive()
	p.ObserveSpan(k, &s)
	var out proctest.Collector
	p.Evaluate(1001*Minute, &out)
	if len(out.Rollups) != 1 {
		t.Fatalf("%d rows", len(out.Rollups))
	}
	r := out.Rollups[0]
	if r.N != 4 || r.InputTokens != 30 || r.OutputTokens != 26 || r.ReasoningTokens != 4 || len(r.DurationsMs) != 4 || len(r.TPOTsMs) != 1 {
		t.Fatalf("row %+v", r)
	}
	// And the current snapshot of the restored state round-trips.
	p2, _ := New(Config{MaxSamplesPerMinute: 10})
	if err := p2.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	b3, _ := p2.MarshalBinary()
	p3, _ := New(Config{MaxSamplesPerMinute: 10})
	if err := p3.UnmarshalBinary(b3); err != nil {
		t.Fatal(err)
	}
	if b3[len("fusebox.rollup")+4] != 4 {
		t.Fatalf("written version %d, want 4", b3[len("fusebox.rollup")+4])
	}
}
