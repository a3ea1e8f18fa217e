package schemas

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

const formsStart = int64(1_750_000_000_000_000_000)

// formsSpan builds a one-span message (scope given) whose span lasts 2 s,
// with attributes set by attrs and events at the given offsets (ms) after
// its start, and decodes it in both encodings.
func formsSpan(t *testing.T, scope string, attrs func(pcommon.Map), events ...struct {
	name string
	ms   int64
}) ([]Span, DecodeStats, error) {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scope)
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{2})
	sp.SetStartTimestamp(pcommon.Timestamp(formsStart))
	sp.SetEndTimestamp(pcommon.Timestamp(formsStart + 2e9))
	attrs(sp.Attributes())
	for _, e := range events {
		ev := sp.Events().AppendEmpty()
		ev.SetName(e.name)
		ev.SetTimestamp(pcommon.Timestamp(formsStart + e.ms*1e6))
		ev.Attributes().PutStr("gen_ai.completion", "content is never read")
	}
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return decodeBoth(t, pb, js, Limits{})
}

type ev = struct {
	name string
	ms   int64
}

// formsOne is formsSpan for a message whose span must decode as a call.
func formsOne(t *testing.T, scope string, attrs func(pcommon.Map), events ...ev) Span {
	t.Helper()
	spans, st, err := formsSpan(t, scope, attrs, events...)
	if err != nil || len(spans) != 1 {
		t.Fatalf("%d spans, stats %+v, err %v", len(spans), st, err)
	}
	return spans[0]
}

// TestTTFTForms checks the order in which the TTFT forms count: each case
// drops the form that won the one before.
func TestTTFTForms(t *testing.T) {
	chunk, first := ev{chunkEventName, 300}, ev{firstTokenEventName, 400}
	for _, tc := range []struct {
		name   string
		attrs  []string // of: chunk, token, server (seconds 0.1, 0.2, 0.25)
		events []ev
		want   float64 // ms; 0 none
		stream int     // -1 absent, 0 false, 1 true
	}{
		{"time_to_first_chunk wins", []string{"chunk", "token", "server"}, []ev{chunk, first}, 100, -1},
		{"then time_to_first_token", []string{"token", "server"}, []ev{chunk, first}, 200, -1},
		{"then openlit's server TTFT (seconds)", []string{"server"}, []ev{chunk, first}, 250, -1},
		// openlit writes it on plain calls too, as their whole duration.
		{"not openlit's server TTFT of a call not streamed", []string{"server", "nostream"}, nil, 0, 0},
		{"openlit's server TTFT of a streamed call", []string{"server", "stream"}, nil, 250, 1},
		{"then the first completion chunk event", nil, []ev{{chunkEventName, 500}, chunk, first}, 300, 1},
		{"then the First Token Stream Event", nil, []ev{first, {"exception", 10}}, 400, 1},
		{"none", nil, []ev{{"exception", 10}}, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := formsOne(t, "x", func(m pcommon.Map) {
				m.PutStr("gen_ai.request.model", "gpt-4o")
				for _, a := range tc.attrs {
					switch a {
					case "chunk":
						m.PutDouble("gen_ai.response.time_to_first_chunk", 0.1)
					case "token":
						m.PutDouble("gen_ai.response.time_to_first_token", 0.2)
					case "server":
						m.PutDouble("gen_ai.server.time_to_first_token", 0.25)
					case "stream", "nostream":
						m.PutBool("gen_ai.request.stream", a == "stream")
					}
				}
			}, tc.events...)
			if tc.want == 0 {
				if s.Has&HasTTFT != 0 {
					t.Fatalf("TTFT %v, want none", s.TTFTMs)
				}
			} else if s.Has&HasTTFT == 0 || s.TTFTMs != tc.want {
				t.Fatalf("TTFT %v (has %v), want %v ms", s.TTFTMs, s.Has&HasTTFT != 0, tc.want)
			}
			gotStream := -1
			if s.Has&HasStream != 0 {
				gotStream = map[bool]int{false: 0, true: 1}[s.Stream]
			}
			if gotStream != tc.stream {
				t.Fatalf("stream %d, want %d", gotStream, tc.stream)
			}
		})
	}
}

// TestStreamForms checks the order of the streaming forms.
func TestStreamForms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   func(pcommon.Map)
		evs   []ev
		want  bool
		known bool
	}{
		{"gen_ai.request.stream wins", func(m pcommon.Map) {
			m.PutBool("gen_ai.request.stream", false)
			m.PutBool("gen_ai.is_streaming", true)
		}, []ev{{chunkEventName, 10}}, false, true},
		{"then gen_ai.is_streaming", func(m pcommon.Map) {
			m.PutBool("gen_ai.is_streaming", false)
			m.PutBool("llm.is_streaming", true)
		}, []ev{{chunkEventName, 10}}, false, true},
		{"then llm.is_streaming", func(m pcommon.Map) {
			m.PutBool("llm.is_streaming", false)
			m.PutStr("llm.invocation_parameters", `{"stream": true}`)
		}, nil, false, true},
		{"then the invocation parameters", func(m pcommon.Map) {
			m.PutStr("llm.invocation_parameters", `{"model":"gpt-4o","stream":false,"stream_options":{"include_usage":true}}`)
		}, []ev{{firstTokenEventName, 10}}, false, true},
		{"then a stream event", func(pcommon.Map) {}, []ev{{firstTokenEventName, 10}}, true, true},
		{"else unknown", func(pcommon.Map) {}, nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := formsOne(t, "x", func(m pcommon.Map) {
				m.PutStr("gen_ai.request.model", "gpt-4o")
				tc.set(m)
			}, tc.evs...)
			if (s.Has&HasStream != 0) != tc.known || s.Stream != tc.want {
				t.Fatalf("stream %v (known %v), want %v (known %v)", s.Stream, s.Has&HasStream != 0, tc.want, tc.known)
			}
		})
	}
}

// TestTPOTForms: openlit's gen_ai.server.time_per_output_token (seconds)
// is TPOTMs as given; 0 (openlit's "not measured") and non-streamed calls
// fall back to the derivation.
func TestTPOTForms(t *testing.T) {
	base := func(m pcommon.Map) {
		m.PutStr("gen_ai.request.model", "gpt-4o")
		m.PutInt("gen_ai.usage.output_tokens", 11)
		m.PutDouble("gen_ai.server.time_to_first_token", 0.5)
	}
	for _, tc := range []struct {
		name   string
		tpot   float64
		stream bool
		want   float64
		has    bool
	}{
		{"given", 0.024, true, 24, true},
		{"zero: derived", 0, true, (2000 - 500) / 10.0, true},
		{"not streamed: none", 0.024, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := formsOne(t, "openlit.instrumentation.openai", func(m pcommon.Map) {
				base(m)
				m.PutDouble("gen_ai.server.time_per_output_token", tc.tpot)
				m.PutBool("gen_ai.request.stream", tc.stream)
			})
			if (s.Has&HasTPOT != 0) != tc.has || s.TPOTMs != tc.want {
				t.Fatalf("TPOT %v (has %v), want %v (has %v)", s.TPOTMs, s.Has&HasTPOT != 0, tc.want, tc.has)
			}
		})
	}
}

// TestOpenInferenceMapping checks the llm.* mapping and that the gen_ai.*
// names win over it.
func TestOpenInferenceMapping(t *testing.T) {
	const oi = "openinference.instrumentation.openai"
	oiAttrs := func(m pcommon.Map) {
		m.PutStr("openinference.span.kind", "LLM")
		m.PutStr("llm.model_name", "gpt-4o-mini-2024-07-18")
		m.PutStr("llm.invocation_parameters", `{"temperature": 0.1, "model": "gpt-4o\u002dmini", "messages": "x"}`)
		m.PutInt("llm.token_count.prompt", 11)
		m.PutInt("llm.token_count.completion", 4)
		m.PutStr("llm.system", "openai")
		m.PutStr("llm.finish_reason", "length")
		// Content, never read: of any type.
		m.PutEmptyBytes("llm.input_messages.0.message.content").FromRaw([]byte{0xff})
		m.PutEmptyMap("gen_ai.input.messages").PutStr("role", "user")
		m.PutInt("input.value", 3)
		m.PutEmptySlice("llm.output_messages.0.message.contents")
	}
	s := formsOne(t, oi, oiAttrs)
	want := Span{Key: Key{Service: "svc", Model: "gpt-4o-mini"}, ResponseModel: "gpt-4o-mini-2024-07-18", Operation: "chat", Route: "chat",
		Provider: "openai", FinishReason: "length", InputTokens: 11, OutputTokens: 4, Scope: oi}
	got := Span{Key: s.Key, ResponseModel: s.ResponseModel, Operation: s.Operation, Route: s.Route, Provider: s.Provider,
		FinishReason: s.FinishReason, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, Scope: s.Scope}
	if got != want || s.Has&(HasInputTokens|HasOutputTokens) != HasInputTokens|HasOutputTokens {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// llm.provider before llm.system; the model name when the parameters have none.
	s = formsOne(t, oi, func(m pcommon.Map) {
		oiAttrs(m)
		m.PutStr("llm.provider", "azure")
		m.PutStr("llm.invocation_parameters", `{}`)
	})
	if s.Provider != "azure" || s.Key.Model != "gpt-4o-mini-2024-07-18" {
		t.Fatalf("provider %q model %q", s.Provider, s.Key.Model)
	}
	// The gen_ai.* names win.
	s = formsOne(t, oi, func(m pcommon.Map) {
		oiAttrs(m)
		m.PutStr("gen_ai.request.model", "req")
		m.PutStr("gen_ai.response.model", "resp")
		m.PutStr("gen_ai.operation.name", "text_completion")
		m.PutStr("gen_ai.system", "gs")
		m.PutInt("gen_ai.usage.input_tokens", 1)
		m.PutInt("gen_ai.usage.output_tokens", 2)
		m.PutStr("gen_ai.response.finish_reasons", "stop")
	})
	if s.Key.Model != "req" || s.ResponseModel != "resp" || s.Operation != "text_completion" || s.Provider != "gs" ||
		s.InputTokens != 1 || s.OutputTokens != 2 || s.FinishReason != "stop" {
		t.Fatalf("gen_ai names lost: %+v", s)
	}
	// gen_ai.response.model before the invocation parameters? No: the
	// request model of the parameters comes first, the response model after.
	s = formsOne(t, oi, func(m pcommon.Map) {
		oiAttrs(m)
		m.PutStr("gen_ai.response.model", "resp")
	})
	if s.Key.Model != "gpt-4o-mini" || s.ResponseModel != "resp" {
		t.Fatalf("model %q response %q", s.Key.Model, s.ResponseModel)
	}
	// An embedding span.
	s = formsOne(t, oi, func(m pcommon.Map) {
		m.PutStr("openinference.span.kind", "EMBEDDING")
		m.PutStr("embedding.model_name", "text-embedding-3-small-2024")
		m.PutStr("embedding.invocation_parameters", `{"model": "text-embedding-3-small"}`)
		m.PutInt("llm.token_count.prompt", 5)
	})
	if s.Key.Model != "text-embedding-3-small" || s.ResponseModel != "text-embedding-3-small-2024" || s.Operation != "embeddings" || s.InputTokens != 5 {
		t.Fatalf("embedding %+v", s)
	}
	// A failed call: status ERROR.
	td := func(m pcommon.Map) {
		m.PutStr("openinference.span.kind", "LLM")
		m.PutStr("llm.invocation_parameters", `{"model": "fail"}`)
	}
	spans, st, err := formsSpan(t, oi, td)
	if err != nil || len(spans) != 1 || spans[0].Key.Model != "fail" {
		t.Fatalf("failed call: %+v %+v %v", spans, st, err)
	}
	// Other kinds are not LLM calls, even with a model name.
	for _, kind := range []string{"CHAIN", "TOOL", "RETRIEVER", "AGENT"} {
		spans, st, err := formsSpan(t, oi, func(m pcommon.Map) {
			m.PutStr("openinference.span.kind", kind)
			m.PutStr("llm.model_name", "gpt-4o")
		})
		if err != nil || len(spans) != 0 || st.SkippedNoModel != 1 || len(st.Unkeyed) != 1 || st.Unkeyed[0].Reason != UnkeyedNotLLMKind ||
			st.Unkeyed[0].Scope != oi || !strings.Contains(strings.Join(st.Unkeyed[0].Attributes, " "), "openinference.span.kind="+kind) {
			t.Fatalf("%s: %+v %+v %v", kind, spans, st, err)
		}
	}
}

// TestInvocationParametersErrors: parameters that are not a JSON object
// (or a model that is not a string) reject the LLM span, naming the
// attribute.
func TestInvocationParametersErrors(t *testing.T) {
	for _, bad := range []string{`not json`, `{"model": 3}`, `{"model": "a"} trailing`, `[1]`} {
		_, _, err := formsSpan(t, "openinference.instrumentation.openai", func(m pcommon.Map) {
			m.PutStr("openinference.span.kind", "LLM")
			m.PutStr("llm.invocation_parameters", bad)
		})
		var fe *FieldError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || !strings.Contains(fe.Field, "llm.invocation_parameters") {
			t.Errorf("%s: err %v, want ErrInvalid naming llm.invocation_parameters", bad, err)
		}
	}
	// Not an LLM span: the bad value costs nothing.
	spans, st, err := formsSpan(t, "x", func(m pcommon.Map) {
		m.PutStr("openinference.span.kind", "CHAIN")
		m.PutStr("llm.invocation_parameters", "not json")
	})
	if err != nil || len(spans) != 0 || st.SkippedNoModel != 1 {
		t.Fatalf("chain: %v %+v %v", spans, st, err)
	}
}

// TestUnkeyedStats: what looks like an LLM call (scope or attribute) and
// cannot be keyed is counted by scope and reason; other spans are only
// skipped; scopes past MaxUnkeyedScopes count as "other".
func TestUnkeyedStats(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	add := func(scope string, attrs func(pcommon.Map)) {
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(scope)
		sp := ss.Spans().AppendEmpty()
		sp.SetStartTimestamp(1)
		sp.SetEndTimestamp(2)
		attrs(sp.Attributes())
	}
	none := func(pcommon.Map) {}
	add("opentelemetry.instrumentation.httpx", func(m pcommon.Map) { m.PutStr("http.method", "POST") }) // not LLM-looking
	add("io.traceloop.SDK", none)                                                                       // scope
	add("my.app", func(m pcommon.Map) { m.PutStr("gen_ai.conversation.id", "c") })                      // attribute
	add("my.app", func(m pcommon.Map) { m.PutStr("gen_ai.request.model", "") })                         // an empty model
	for i := range MaxUnkeyedScopes + 5 {
		add(fmt.Sprintf("Vertexai-%d", i), none)
	}
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := decodeBoth(t, pb, js, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if st.SkippedNoModel != 4+MaxUnkeyedScopes+5 {
		t.Fatalf("skipped %d", st.SkippedNoModel)
	}
	byScope := map[string]UnkeyedSpans{}
	for _, u := range st.Unkeyed {
		byScope[u.Scope] = u
	}
	if len(st.Unkeyed) != MaxUnkeyedScopes+1 {
		t.Fatalf("%d entries, want %d scopes and other: %+v", len(st.Unkeyed), MaxUnkeyedScopes, st.Unkeyed)
	}
	if _, ok := byScope["opentelemetry.instrumentation.httpx"]; ok {
		t.Fatal("the HTTP span counted as unkeyed")
	}
	if u := byScope["my.app"]; u.Count != 2 || u.Reason != UnkeyedNoModel || strings.Join(u.Attributes, ",") != "gen_ai.conversation.id" {
		t.Fatalf("my.app: %+v", u)
	}
	if u := byScope[UnkeyedOtherScope]; u.Count != 7 { // 2 named scopes + 30 Vertexai ones fill the cap; 7 left
		t.Fatalf("other: %+v", u)
	}
}

// TestLibraryFormsReencode: spans decoded from the libraries' forms
// (generated corpus, both encodings) re-encoded by the encoders decode to
// the same spans, an explicit TPOT included: the fuzz targets' property,
// run over every seed of the corpus.
func TestLibraryFormsReencode(t *testing.T) {
	names := DefaultAttributeNames()
	checked := 0
	for seed := range uint64(300) {
		td := genPdataTraces(newRand(seed), names, pdataCorpusOptions{})
		pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		for enc, msg := range map[string][]byte{"proto": pb, "json": js} {
			dec, encode := DecodeOTLPProto, EncodeOTLPProto
			if enc == "json" {
				dec, encode = DecodeOTLPJSON, EncodeOTLPJSON
			}
			spans, _, err := dec(msg, names, generousLimits, nil)
			if err != nil {
				continue // rejected spans: covered by the pdata comparison
			}
			again, _, err := dec(encode(nil, spans, names), names, generousLimits, nil)
			if err != nil {
				t.Fatalf("seed %d %s: re-decoding: %v", seed, enc, err)
			}
			fuzzSpansAgree(t, again, byServiceOrder(spans))
			checked += len(spans)
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d spans checked", checked)
	}
}

// TestLibraryTimingsOutOfRange: a TTFT of a library form (openlit's
// gen_ai.server.time_to_first_token, a first-token event) outside
// [0, duration] of the 2 s span, or a negative openlit TPOT, is left out
// and counted by reason; the span is kept with its duration, error and
// tokens and passes Validate (it was dead-lettered whole, its error naming
// gen_ai.response.time_to_first_chunk, which it never had). A TTFT of the
// GenAI attributes out of range still makes the span invalid.
func TestLibraryTimingsOutOfRange(t *testing.T) {
	model := func(m pcommon.Map) {
		m.PutStr("gen_ai.request.model", "gpt-4o")
		m.PutStr("error.type", "timeout")
		m.PutInt("gen_ai.usage.output_tokens", 11)
	}
	for _, tc := range []struct {
		name    string
		set     func(pcommon.Map)
		evs     []ev
		ttft    float64 // ms; -1 none
		tpot    float64 // ms; -1 none
		dropped DroppedTimings
	}{
		{"openlit 2.0005 s on a 2 s span", func(m pcommon.Map) { m.PutDouble("gen_ai.server.time_to_first_token", 2.0005) },
			nil, -1, -1, DroppedTimings{ServerTTFT: 1}},
		{"openlit negative", func(m pcommon.Map) { m.PutDouble("gen_ai.server.time_to_first_token", -0.1) },
			nil, -1, -1, DroppedTimings{ServerTTFT: 1}},
		{"openlit the whole span", func(m pcommon.Map) { m.PutDouble("gen_ai.server.time_to_first_token", 2) },
			nil, 2000, 0, DroppedTimings{}},
		{"chunk event before the start", func(pcommon.Map) {}, []ev{{chunkEventName, -5}}, -1, -1, DroppedTimings{EventBeforeStart: 1}},
		{"chunk event after the end", func(pcommon.Map) {}, []ev{{chunkEventName, 2001}}, -1, -1, DroppedTimings{EventAfterEnd: 1}},
		{"First Token Stream Event after the end", func(pcommon.Map) {}, []ev{{firstTokenEventName, 2500}}, -1, -1, DroppedTimings{EventAfterEnd: 1}},
		{"event at the end", func(pcommon.Map) {}, []ev{{chunkEventName, 2000}}, 2000, 0, DroppedTimings{}},
		{"negative openlit TPOT: the derived one", func(m pcommon.Map) {
			m.PutDouble("gen_ai.server.time_to_first_token", 0.5)
			m.PutDouble("gen_ai.server.time_per_output_token", -0.02)
		}, nil, 500, (2000 - 500) / 10.0, DroppedTimings{ServerTPOT: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, st, err := formsSpan(t, "openlit.instrumentation.openai", func(m pcommon.Map) {
				model(m)
				tc.set(m)
			}, tc.evs...)
			if err != nil || len(spans) != 1 {
				t.Fatalf("%d spans, %v: want the span kept", len(spans), err)
			}
			s := spans[0]
			if err := s.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if s.DurationMs != 2000 || !s.Error || s.OutputTokens != 11 {
				t.Fatalf("span %+v: want its duration, error and tokens", s)
			}
			if got := -1.0; s.Has&HasTTFT != 0 {
				got = s.TTFTMs
				if got != tc.ttft {
					t.Fatalf("TTFT %v, want %v", got, tc.ttft)
				}
			} else if tc.ttft != -1 {
				t.Fatalf("no TTFT, want %v", tc.ttft)
			}
			if got := -1.0; s.Has&HasTPOT != 0 {
				got = s.TPOTMs
				if got != tc.tpot {
					t.Fatalf("TPOT %v, want %v", got, tc.tpot)
				}
			} else if tc.tpot != -1 {
				t.Fatalf("no TPOT, want %v", tc.tpot)
			}
			if st.Dropped != tc.dropped {
				t.Fatalf("dropped %+v, want %+v", st.Dropped, tc.dropped)
			}
		})
	}
	// The GenAI attributes are not forgiven: the span is invalid, the
	// error naming the attribute it had.
	for _, name := range []string{"gen_ai.response.time_to_first_chunk", "gen_ai.response.time_to_first_token"} {
		spans, st, err := formsSpan(t, "x", func(m pcommon.Map) {
			model(m)
			m.PutDouble(name, 2.5)
		})
		var verr error
		if err == nil && len(spans) == 1 {
			verr = spans[0].Validate()
		} else {
			verr = err
		}
		if !errors.Is(verr, ErrInvalid) || !strings.Contains(verr.Error(), name) || !strings.Contains(verr.Error(), "longer than the whole call") ||
			st.Dropped != (DroppedTimings{}) {
			t.Fatalf("%s of 2.5 s on a 2 s span: %v (dropped %+v), want invalid naming %s", name, verr, st.Dropped, name)
		}
	}
}
