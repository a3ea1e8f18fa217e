package schemas

import (
	"slices"
	"strings"
	"testing"
)

// TestOTLPScope checks that every span carries the name of its ScopeSpans'
// instrumentation scope in both encodings, wherever the scope lies in the
// ScopeSpans (exporters write it first; the spans may come before it), and
// "" for a ScopeSpans without a scope.
func TestOTLPScope(t *testing.T) {
	span := pbSpan(withModel)
	scope := func(name string) []byte {
		return pbBytes(1, slices.Concat(pbStr(1, name), pbStr(2, "1.0.0"), pbBytes(3, pbKV("k", pbStrVal("v")))))
	}
	resource := pbBytes(1, pbBytes(1, slices.Concat(pbStr(1, "service.name"), pbBytes(2, pbStrVal("svc")))))
	pb := pbBytes(1, slices.Concat(resource,
		pbBytes(2, slices.Concat(scope("opentelemetry.instrumentation.openai_v2"), pbBytes(2, span))),
		pbBytes(2, slices.Concat(pbBytes(2, span), scope("openinference.instrumentation.openai"))), // scope after its spans
		pbBytes(2, pbBytes(2, span)), // no scope
	))
	js := []byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[` +
		`{"scope":{"name":"opentelemetry.instrumentation.openai_v2","version":"1.0.0","attributes":[{"key":"k","value":{"stringValue":"v"}}]},"spans":[{` + jsonGoodSpan + `,"attributes":[` + jsonModelAttr + `]}]},` +
		`{"spans":[{` + jsonGoodSpan + `,"attributes":[` + jsonModelAttr + `]}],"scope":{"name":"openinference.instrumentation.openai"}},` +
		`{"spans":[{` + jsonGoodSpan + `,"attributes":[` + jsonModelAttr + `]}]}]}]}`)
	spans, _, err := decodeBoth(t, pb, js, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range spans {
		got = append(got, s.Scope)
	}
	want := []string{"opentelemetry.instrumentation.openai_v2", "openinference.instrumentation.openai", ""}
	if !slices.Equal(got, want) {
		t.Fatalf("scopes %q, want %q", got, want)
	}
	// "spans": null stands for no spans (as null does everywhere in
	// OTLP/JSON); main before issue 23 called it malformed.
	if _, st, err := DecodeOTLPJSON([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":null,"scope":{"name":"x"}}]}]}`), AttributeNames{}, Limits{}, nil); err != nil || st.SpansSeen != 0 {
		t.Fatalf("spans null: %+v, %v", st, err)
	}
	// The encoders write each span's scope, so Scope round-trips.
	in := randSpans(newRand(3), 6)
	for i := range in {
		in[i].Scope = []string{"", "openlit.otel.tracing", "opentelemetry.instrumentation.openai.v1"}[i%3]
	}
	for enc, b := range map[string][]byte{"proto": EncodeOTLPProto(nil, in, AttributeNames{}), "json": EncodeOTLPJSON(nil, in, AttributeNames{})} {
		dec := DecodeOTLPProto
		if enc == "json" {
			dec = DecodeOTLPJSON
		}
		out, _, err := dec(b, AttributeNames{}, Limits{}, nil)
		if err != nil {
			t.Fatal(enc, err)
		}
		assertSpansEqual(t, out, byServiceOrder(in))
	}
}

// TestOTLPScopeBounded: a scope name longer than MaxScopeBytes is cut to
// at most 128 bytes at a character boundary, in both encodings; one that
// is not valid UTF-8 (protobuf) is no name — the message and its spans
// are read, the name counted in InvalidScopeNames — where it rejected the
// whole message; spans without a scope, and those past MaxUnkeyedScopes,
// count under reserved labels no library's name collides with, so a
// library named "other" or "none" keeps its own.
func TestOTLPScopeBounded(t *testing.T) {
	span := pbSpan(withModel)
	noModel := pbSpan()
	scope := func(name string) []byte { return pbBytes(1, pbStr(1, name)) }
	long := "openlit." + strings.Repeat("x", 119) + "é" + strings.Repeat("y", 80) // "é" is bytes 128 and 129
	cut := "openlit." + strings.Repeat("x", 119)
	resource := pbBytes(1, pbBytes(1, slices.Concat(pbStr(1, "service.name"), pbBytes(2, pbStrVal("svc")))))
	pb := pbBytes(1, slices.Concat(resource,
		pbBytes(2, slices.Concat(scope(long), pbBytes(2, span))),
		pbBytes(2, slices.Concat(scope("other"), pbBytes(2, span))),
	))
	js := []byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[` +
		`{"scope":{"name":"` + long + `"},"spans":[{` + jsonGoodSpan + `,"attributes":[` + jsonModelAttr + `]}]},` +
		`{"scope":{"name":"other"},"spans":[{` + jsonGoodSpan + `,"attributes":[` + jsonModelAttr + `]}]}]}]}`)
	spans, _, err := decodeBoth(t, pb, js, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 || spans[0].Scope != cut || len(spans[0].Scope) != 127 || spans[1].Scope != "other" {
		t.Fatalf("scopes %q, want the long name cut to %d bytes before its é, and other", []string{spans[0].Scope, spans[1].Scope}, len(cut))
	}

	bad := pbBytes(1, slices.Concat(resource,
		pbBytes(2, slices.Concat(scope("openai\xff\xfe"), pbBytes(2, span), pbBytes(2, noModel))),
		pbBytes(2, slices.Concat(scope("openlit"), pbBytes(2, span))),
		pbBytes(2, slices.Concat(scope("none"), pbBytes(2, noModel))),
	))
	spans, st, err := DecodeOTLPProto(bad, AttributeNames{}, Limits{}, nil)
	if err != nil {
		t.Fatalf("a scope name not UTF-8 rejects the message: %v", err)
	}
	if len(spans) != 2 || spans[0].Scope != "" || spans[1].Scope != "openlit" || st.InvalidScopeNames != 1 {
		t.Fatalf("%d spans (scopes %q), invalid scope names %d: want 2, the first without a scope, 1", len(spans), []string{spans[0].Scope}, st.InvalidScopeNames)
	}
	labels := map[string]int{}
	for _, u := range st.Unkeyed {
		labels[u.Scope] += u.Count
	}
	if labels[UnkeyedNoScope] != 1 || labels["none"] != 1 || len(labels) != 2 {
		t.Fatalf("unkeyed %+v: want one under %s (the bad name) and one under the library none", st.Unkeyed, UnkeyedNoScope)
	}
	if UnkeyedNoScope != "(none)" || UnkeyedOtherScope != "(other)" {
		t.Fatal("the reserved labels changed")
	}
}
