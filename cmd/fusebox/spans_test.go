package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestSpansPrintsWhatFuseboxReads: `fusebox spans` prints one JSON line per
// LLM call of the topic, with the fields the decoder read (absent ones
// null), a line naming each undecodable record, and counts on stderr.
func TestSpansPrintsWhatFuseboxReads(t *testing.T) {
	k := testharness.StartKafka(t)
	names := schemas.DefaultAttributeNames()
	streamed := schemas.Span{
		StartUnixNano: 1_700_000_000_000_000_000, EndUnixNano: 1_700_000_000_250_000_000,
		TTFTMs: 50, InputTokens: 7, OutputTokens: 11, Stream: true, FinishReason: "length",
		Key:       schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: "canary"},
		Operation: "chat", Provider: "openai",
		Has: schemas.HasTTFT | schemas.HasInputTokens | schemas.HasOutputTokens | schemas.HasStream,
	}
	streamed.TraceID[0], streamed.SpanID[0] = 1, 1
	failed := schemas.Span{
		StartUnixNano: 1_700_000_001_000_000_000, EndUnixNano: 1_700_000_001_100_000_000,
		Error: true, ErrorType: "RateLimitError",
		Key: schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini"}, Operation: "chat",
	}
	failed.TraceID[0], failed.SpanID[0] = 2, 2
	for _, s := range []*schemas.Span{&streamed, &failed} {
		s.Derive()
	}
	k.Produce(t,
		&kgo.Record{Topic: "otlp_spans", Value: schemas.EncodeOTLPProto(nil, []schemas.Span{streamed, failed}, names)},
		&kgo.Record{Topic: "otlp_spans", Value: []byte("{not json")},
	)
	code, stdout, stderr := runCmd(t, "spans", "--brokers", strings.Join(k.Brokers, ","))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, m)
	}
	if len(got) != 3 {
		t.Fatalf("want 3 lines (2 spans, 1 undecodable record), got %d:\n%s", len(got), stdout)
	}
	var spans []map[string]any
	var bad int
	for _, m := range got {
		if _, ok := m["error"].(string); ok {
			bad++
			continue
		}
		spans = append(spans, m)
	}
	if bad != 1 || len(spans) != 2 {
		t.Fatalf("want 1 error line and 2 spans: %s", stdout)
	}
	if spans[0]["error"] == true {
		spans[0], spans[1] = spans[1], spans[0]
	}
	s := spans[0]
	for f, want := range map[string]any{
		"tenant": "acme", "service": "chat", "model": "gpt-4o-mini", "variant": "canary", "operation": "chat",
		"provider": "openai", "duration_ms": 250.0, "ttft_ms": 50.0, "tpot_ms": 20.0, "input_tokens": 7.0,
		"output_tokens": 11.0, "stream": true, "finish_reason": "length", "error": false,
	} {
		if s[f] != want {
			t.Errorf("streamed span: %s = %v, want %v", f, s[f], want)
		}
	}
	f := spans[1]
	for _, null := range []string{"ttft_ms", "tpot_ms", "input_tokens", "output_tokens", "stream", "finish_reason", "provider"} {
		if v, ok := f[null]; !ok || v != nil {
			t.Errorf("failed span: %s = %v, want null", null, v)
		}
	}
	if f["error"] != true || f["error_type"] != "RateLimitError" {
		t.Errorf("failed span: error %v, error_type %v", f["error"], f["error_type"])
	}
	if !strings.Contains(stderr, "2 records (1 undecodable), 2 spans seen, 2 LLM calls printed") {
		t.Errorf("stderr: %s", stderr)
	}
}
