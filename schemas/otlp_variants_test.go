package schemas

import (
	"errors"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// variantSpan builds a one-span message with pdata, in both encodings, from
// a name and attributes put in the given order.
func variantSpan(t *testing.T, name string, put func(a pcommon.Map)) (pb, js []byte) {
	t.Helper()
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{2})
	sp.SetName(name)
	sp.SetStartTimestamp(1_000_000_000)
	sp.SetEndTimestamp(3_000_000_000) // 2 s
	put(sp.Attributes())
	var pm ptrace.ProtoMarshaler
	var jm ptrace.JSONMarshaler
	pb, err := pm.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	if js, err = jm.MarshalTraces(td); err != nil {
		t.Fatal(err)
	}
	return pb, js
}

// TestAttributeVariantsPrecedence pins which name wins when a producer writes
// several generations of the conventions at once: the newer, whatever the
// order of the attributes.
func TestAttributeVariantsPrecedence(t *testing.T) {
	pb, js := variantSpan(t, "chat gpt-4o", func(a pcommon.Map) {
		a.PutStr("gen_ai.request.model", "gpt-4o")
		a.PutStr("gen_ai.system", "openai")
		a.PutStr("gen_ai.provider.name", "azure.ai.openai")
		a.PutDouble("gen_ai.response.time_to_first_token", 0.9) // older, first: loses
		a.PutDouble("gen_ai.response.time_to_first_chunk", 0.5)
		a.PutInt("gen_ai.usage.cache_read_input_tokens", 11) // older, first: loses
		a.PutInt("gen_ai.usage.cache_read.input_tokens", 12)
		a.PutInt("gen_ai.usage.cache_creation.input_tokens", 21)
		a.PutInt("gen_ai.usage.cache_creation_input_tokens", 22) // older, after: loses
		a.PutDouble("gen_ai.usage.reasoning.output_tokens", 30)  // a whole double counts
		a.PutInt("gen_ai.usage.output_tokens", 101)
		a.PutBool("gen_ai.request.stream", true)
	})
	spans, _, err := decodeBoth(t, pb, js, Limits{})
	if err != nil || len(spans) != 1 {
		t.Fatalf("spans %v, err %v", spans, err)
	}
	s := spans[0]
	if s.Provider != "azure.ai.openai" || s.TTFTMs != 500 || s.CacheReadTokens != 12 || s.CacheWriteTokens != 21 ||
		s.ReasoningTokens != 30 || !s.Stream || s.Operation != "chat" || s.Route != "chat" {
		t.Fatalf("got %+v", s)
	}
	want := HasTTFT | HasTPOT | HasOutputTokens | HasCacheReadTokens | HasCacheWriteTokens | HasReasoningTokens | HasStream
	if s.Has != want {
		t.Fatalf("Has = %b, want %b", s.Has, want)
	}
	// TPOT from duration, TTFT and output tokens: (2000 - 500) / (101 - 1).
	if s.TPOTMs != 15 {
		t.Fatalf("TPOT = %v, want 15", s.TPOTMs)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestAttributeVariantsOlderOnly reads a span written with the older names
// only.
func TestAttributeVariantsOlderOnly(t *testing.T) {
	pb, js := variantSpan(t, "chat claude", func(a pcommon.Map) {
		a.PutStr("gen_ai.request.model", "claude")
		a.PutStr("gen_ai.system", "anthropic")
		a.PutDouble("gen_ai.response.time_to_first_token", 0.25)
		a.PutInt("gen_ai.usage.cache_read_input_tokens", 7)
		a.PutInt("gen_ai.usage.cache_creation_input_tokens", 8)
		a.PutInt("gen_ai.usage.output_tokens", 1)
	})
	spans, _, err := decodeBoth(t, pb, js, Limits{})
	if err != nil || len(spans) != 1 {
		t.Fatalf("spans %v, err %v", spans, err)
	}
	s := spans[0]
	if s.Provider != "anthropic" || s.TTFTMs != 250 || s.CacheReadTokens != 7 || s.CacheWriteTokens != 8 || s.Operation != "chat" {
		t.Fatalf("got %+v", s)
	}
	// One output token: no time after it, so no TPOT (absent, not zero).
	if s.Has&(HasTPOT|HasStream|HasReasoningTokens) != 0 {
		t.Fatalf("Has = %b: TPOT, stream or reasoning set", s.Has)
	}
}

// TestOperationFromSpanName takes the operation from a span name only when it
// has the "{operation} {model}" form of the span's own model.
func TestOperationFromSpanName(t *testing.T) {
	for _, tc := range []struct{ name, op string }{
		{"chat gpt-4o", "chat"},
		{"embeddings gpt-4o-0613", "embeddings"}, // the response model
		{"POST /v1/chat", ""},
		{"chat other-model", ""},
		{"chat", ""},
		{" gpt-4o", ""},
	} {
		pb, js := variantSpan(t, tc.name, func(a pcommon.Map) {
			a.PutStr("gen_ai.request.model", "gpt-4o")
			a.PutStr("gen_ai.response.model", "gpt-4o-0613")
		})
		spans, _, err := decodeBoth(t, pb, js, Limits{})
		if err != nil || len(spans) != 1 {
			t.Fatalf("%q: spans %v, err %v", tc.name, spans, err)
		}
		if spans[0].Operation != tc.op {
			t.Errorf("%q: operation %q, want %q", tc.name, spans[0].Operation, tc.op)
		}
	}
	// The attribute wins over the name.
	pb, js := variantSpan(t, "chat gpt-4o", func(a pcommon.Map) {
		a.PutStr("gen_ai.request.model", "gpt-4o")
		a.PutStr("gen_ai.operation.name", "text_completion")
	})
	spans, _, _ := decodeBoth(t, pb, js, Limits{})
	if len(spans) != 1 || spans[0].Operation != "text_completion" {
		t.Fatalf("got %+v", spans)
	}
}

// TestStreamTypeChecked rejects a stream flag that is not a bool, naming it.
func TestStreamTypeChecked(t *testing.T) {
	pb, js := variantSpan(t, "chat gpt-4o", func(a pcommon.Map) {
		a.PutStr("gen_ai.request.model", "gpt-4o")
		a.PutStr("gen_ai.request.stream", "yes")
	})
	_, _, err := decodeBoth(t, pb, js, Limits{})
	// The bad attribute rejects its span only (a *SpanErrors naming it).
	var se *SpanErrors
	if !errors.As(err, &se) || len(se.Spans) != 1 || se.Spans[0].Index != 0 ||
		se.Spans[0].Err.Error() != "invalid record: resource_spans[0].scope_spans[0].spans[0].attributes[gen_ai.request.stream]: want a bool, got string" {
		t.Fatalf("err = %v", err)
	}
}
