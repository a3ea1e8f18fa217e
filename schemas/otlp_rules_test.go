package schemas

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// decodeBoth decodes the same traces given in both encodings and checks that
// the two decoders agree; it returns the protobuf result.
func decodeBoth(t *testing.T, pb, js []byte, lim Limits) ([]Span, DecodeStats, error) {
	t.Helper()
	ps, pst, perr := DecodeOTLPProto(pb, AttributeNames{}, lim, nil)
	jsp, jst, jerr := DecodeOTLPJSON(js, AttributeNames{}, lim, nil)
	if (perr == nil) != (jerr == nil) || perr != nil && perr.Error() != jerr.Error() {
		t.Fatalf("proto err %v, json err %v", perr, jerr)
	}
	if perr == nil {
		if !reflect.DeepEqual(pst, jst) {
			t.Fatalf("proto stats %+v, json stats %+v", pst, jst)
		}
		assertSpansEqual(t, jsp, ps)
	}
	return ps, pst, perr
}

func TestOTLPLimits(t *testing.T) {
	spans := randSpans(newRand(1), 4)
	for i := range spans {
		spans[i].Key.Service = "svc"
		spans[i].Operation, spans[i].Route = "chat", "chat"
		spans[i].SessionID = strings.Repeat("s", 40)
	}
	pb := EncodeOTLPProto(nil, spans, AttributeNames{})
	js := EncodeOTLPJSON(nil, spans, AttributeNames{})
	for _, tc := range []struct {
		name        string
		lim         Limits
		field, want string
	}{
		{"message bytes", Limits{MaxMessageBytes: 100}, "message", "exceeds max_message_bytes = 100"},
		{"spans", Limits{MaxSpansPerMessage: 3}, "resource_spans[0].scope_spans[0].spans", "4 spans (at least) exceeds max_spans_per_message = 3"},
		{"attributes", Limits{MaxAttributesPerSpan: 2}, "resource_spans[0].scope_spans[0].spans[0].attributes", "exceeds max_attributes_per_span = 2"},
		{"string", Limits{MaxStringBytes: 39}, "resource_spans[0].scope_spans[0].spans[0].attributes[", "40 bytes exceeds max_string_bytes = 39"},
	} {
		for enc, msg := range map[string][]byte{"proto": pb, "json": js} {
			dec := DecodeOTLPProto
			if enc == "json" {
				dec = DecodeOTLPJSON
			}
			_, _, err := dec(msg, AttributeNames{}, tc.lim, nil)
			var fe *FieldError
			if !errors.Is(err, ErrTooLarge) || !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, tc.field) || !strings.Contains(fe.Reason, tc.want) {
				t.Errorf("%s %s: err = %v, want ErrTooLarge on %s: ...%s", tc.name, enc, err, tc.field, tc.want)
			}
		}
	}
	// An unmapped attribute value is held to max_string_bytes too.
	big := pbTraces(pbSpan(withModel, pbKV("gen_ai.prompt", pbStrVal(strings.Repeat("p", 300)))))
	_, _, err := DecodeOTLPProto(big, AttributeNames{}, Limits{MaxStringBytes: 256}, nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("long unmapped value: err = %v, want ErrTooLarge", err)
	}
	bigJSON := jsonTraces(jsonGoodSpan + `,"attributes":[` + jsonModelAttr + `,{"key":"gen_ai.prompt","value":{"stringValue":"` + strings.Repeat("p", 300) + `"}}]`)
	_, _, err = DecodeOTLPJSON(bigJSON, AttributeNames{}, Limits{MaxStringBytes: 256}, nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("long unmapped JSON value: err = %v, want ErrTooLarge", err)
	}
}

// TestOTLPAttributeTypes checks the accepted types and the handling of
// unusable ones, in both encodings.
func TestOTLPAttributeTypes(t *testing.T) {
	kv := func(k string, v []byte) []byte { return pbKV(k, v) }
	dbl := func(f float64) []byte { return pbFixed64(4, math.Float64bits(f)) }
	arr := func(elems ...[]byte) []byte {
		var a []byte
		for _, e := range elems {
			a = append(a, pbBytes(1, e)...)
		}
		return pbBytes(5, a)
	}
	type jkv struct{ k, v string }
	jattrs := func(kvs ...jkv) string {
		var parts []string
		for _, p := range kvs {
			parts = append(parts, `{"key":"`+p.k+`","value":`+p.v+`}`)
		}
		return strings.Join(parts, ",")
	}
	spanPB := func(attrs ...[]byte) []byte { return pbTraces(pbSpan(append([][]byte{withModel}, attrs...)...)) }
	const jsonOpAttr = `{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}`
	spanJS := func(kvs ...jkv) []byte {
		return jsonTraces(jsonGoodSpan + `,"attributes":[` + jsonOpAttr + "," + jsonModelAttr + "," + jattrs(kvs...) + `]`)
	}

	// Accepted forms.
	spans, _, err := decodeBoth(t,
		spanPB(kv("tenant.id", pbIntVal(42)), kv("gen_ai.usage.input_tokens", dbl(120)), kv("gen_ai.usage.output_tokens", pbIntVal(7)),
			kv("gen_ai.response.finish_reasons", pbStrVal("length")), kv("llm.response.confidence", pbIntVal(1)),
			kv("gen_ai.response.time_to_first_chunk", pbIntVal(1)), kv("gen_ai.system", pbStrVal("openai")),
			kv("error.type", pbStrVal("timeout"))),
		spanJS(jkv{"tenant.id", `{"intValue":42}`}, jkv{"gen_ai.usage.input_tokens", `{"doubleValue":120}`},
			jkv{"gen_ai.usage.output_tokens", `{"intValue":"7"}`}, jkv{"gen_ai.response.finish_reasons", `{"stringValue":"length"}`},
			jkv{"llm.response.confidence", `{"intValue":"1"}`}, jkv{"gen_ai.response.time_to_first_chunk", `{"intValue":1}`},
			jkv{"gen_ai.system", `{"stringValue":"openai"}`}, jkv{"error.type", `{"stringValue":"timeout"}`}),
		Limits{})
	if err != nil {
		t.Fatal(err)
	}
	s := spans[0]
	if s.Key.Tenant != "42" || s.InputTokens != 120 || s.OutputTokens != 7 || s.FinishReason != "length" ||
		s.Confidence != 1 || s.TTFTMs != 1000 || s.Provider != "openai" || !s.Error || s.ErrorType != "timeout" ||
		s.Has != HasInputTokens|HasOutputTokens|HasConfidence|HasTTFT|HasTPOT || s.Route != "chat" || s.Key.Service != "svc" {
		t.Errorf("accepted forms decoded to %+v", s)
	}

	// An empty array means no finish reason; the first of several wins.
	for _, tc := range []struct {
		pb   []byte
		js   string
		want string
	}{
		{arr(), `{"arrayValue":{}}`, ""},
		{arr(pbStrVal("stop"), pbStrVal("length")), `{"arrayValue":{"values":[{"stringValue":"stop"},{"stringValue":"length"}]}}`, "stop"},
	} {
		spans, _, err := decodeBoth(t, spanPB(kv("gen_ai.response.finish_reasons", tc.pb)), spanJS(jkv{"gen_ai.response.finish_reasons", tc.js}), Limits{})
		if err != nil || spans[0].FinishReason != tc.want {
			t.Errorf("finish reasons: got %q, err %v, want %q", spans[0].FinishReason, err, tc.want)
		}
	}

	// Unusable types fail the message, naming the attribute.
	for _, tc := range []struct {
		name, key string
		pb        []byte
		js        string
	}{
		{"tokens as string", "gen_ai.usage.input_tokens", pbStrVal("12"), `{"stringValue":"12"}`},
		{"fractional tokens", "gen_ai.usage.output_tokens", dbl(1.5), `{"doubleValue":1.5}`},
		{"model as bool", "gen_ai.request.model", pbVarint(2, 1), `{"boolValue":true}`},
		{"finish reasons of ints in a kvlist", "gen_ai.response.finish_reasons", pbBytes(6, nil), `{"kvlistValue":{}}`},
		{"array of bools", "gen_ai.response.finish_reasons", arr(pbVarint(2, 1)), `{"arrayValue":{"values":[{"boolValue":false}]}}`},
		{"confidence as string", "llm.response.confidence", pbStrVal("0.5"), `{"stringValue":"0.5"}`},
	} {
		var pb []byte
		var js []byte
		if tc.key == "gen_ai.request.model" {
			pb = pbTraces(pbSpan(kv(tc.key, tc.pb)))
			js = jsonTraces(jsonGoodSpan + `,"attributes":[` + jsonOpAttr + "," + jattrs(jkv{tc.key, tc.js}) + `]`)
		} else {
			pb, js = spanPB(kv(tc.key, tc.pb)), spanJS(jkv{tc.key, tc.js})
		}
		_, _, err := decodeBoth(t, pb, js, Limits{})
		var fe *FieldError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != "resource_spans[0].scope_spans[0].spans[0].attributes["+tc.key+"]" {
			t.Errorf("%s: err = %v, want ErrInvalid naming the attribute", tc.name, err)
		}
	}

	// A non-LLM span with an unusable attribute is skipped, not an error.
	_, stats, err := decodeBoth(t, pbTraces(pbSpan(kv("llm.response.confidence", pbStrVal("high")))),
		jsonTraces(jsonGoodSpan+`,"attributes":[`+jsonOpAttr+","+jattrs(jkv{"llm.response.confidence", `{"stringValue":"high"}`})+`]`), Limits{})
	if err != nil || stats.SkippedNoModel != 1 {
		t.Errorf("non-LLM span with a bad attribute: stats %+v, err %v", stats, err)
	}
}

// TestOTLPResourceFallbacks checks span-then-resource lookup of the
// configurable attributes, and that an unusable resource attribute fails
// the message only when the resource has an LLM span.
func TestOTLPResourceFallbacks(t *testing.T) {
	res := func(attrs ...[]byte) []byte { return pbBytes(1, slices.Concat(attrs...)) }
	resKV := func(k string, v []byte) []byte { return pbBytes(1, slices.Concat(pbStr(1, k), pbBytes(2, v))) }
	msg := func(resource []byte, spans ...[]byte) []byte {
		var ss []byte
		for _, s := range spans {
			ss = append(ss, pbBytes(2, s)...)
		}
		// scope_spans before the resource: the decoder must still apply it.
		return pbBytes(1, slices.Concat(pbBytes(2, ss), resource))
	}
	r := res(resKV("service.name", pbStrVal("svc")), resKV("tenant.id", pbStrVal("res-tenant")),
		resKV("llm.alignment.score", pbFixed64(4, math.Float64bits(0.25))), resKV("http.route", pbStrVal("/res")))
	spans, _, err := DecodeOTLPProto(msg(r,
		pbSpan(withModel),
		pbSpan(withModel, pbKV("tenant.id", pbStrVal("span-tenant")), pbKV("http.route", pbStrVal(""))),
	), AttributeNames{}, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := spans[0]; s.Key.Tenant != "res-tenant" || s.Alignment != 0.25 || s.Has&HasAlignment == 0 || s.Route != "/res" || s.Key.Service != "svc" {
		t.Errorf("span 0: %+v", s)
	}
	if s := spans[1]; s.Key.Tenant != "span-tenant" || s.Route != "/res" {
		t.Errorf("span 1 (own tenant, empty route falls back): %+v", s)
	}

	bad := res(resKV("service.name", pbVarint(2, 1)))
	if _, stats, err := DecodeOTLPProto(msg(bad, pbSpan()), AttributeNames{}, Limits{}, nil); err != nil || stats.SkippedNoModel != 1 {
		t.Errorf("bad resource, no LLM span: stats %+v, err %v", stats, err)
	}
	_, _, err = DecodeOTLPProto(msg(bad, pbSpan(withModel)), AttributeNames{}, Limits{}, nil)
	var fe *FieldError
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != "resource_spans[0].resource.attributes[service.name]" {
		t.Errorf("bad resource with an LLM span: err = %v", err)
	}
}

// TestOTLPUnknownFieldsSkipped inserts fields of every wire type, with
// numbers OTLP does not use, at every level the decoder walks, and checks
// that the spans come out as without them.
func TestOTLPUnknownFieldsSkipped(t *testing.T) {
	unknown := func(base protowire.Number) []byte {
		b := pbVarint(base, 300)
		b = append(b, pbFixed64(base+1, 7)...)
		b = append(b, pbStr(base+2, "future")...)
		b = protowire.AppendFixed32(protowire.AppendTag(b, base+3, protowire.Fixed32Type), 9)
		b = protowire.AppendTag(b, base+4, protowire.StartGroupType)
		b = append(b, pbVarint(1, 5)...)
		return protowire.AppendTag(b, base+4, protowire.EndGroupType)
	}
	build := func(extra bool) []byte {
		x := func(base protowire.Number) []byte {
			if extra {
				return unknown(base)
			}
			return nil
		}
		kv := func(k string, v []byte) []byte {
			return pbBytes(9, slices.Concat(x(20), pbStr(1, k), x(30), pbBytes(2, slices.Concat(x(40), v, x(50)))))
		}
		span := pbSpan(x(100), kv("gen_ai.request.model", pbStrVal("m")), kv("tenant.id", pbStrVal("t")),
			pbBytes(15, slices.Concat(x(60), pbVarint(3, 2))), x(200))
		resource := pbBytes(1, slices.Concat(x(70), pbBytes(1, slices.Concat(pbStr(1, "service.name"), pbBytes(2, pbStrVal("svc")))), x(80)))
		scope := pbBytes(2, slices.Concat(x(90), pbBytes(2, span), x(110)))
		return slices.Concat(x(120), pbBytes(1, slices.Concat(x(130), resource, scope, x(140))), x(150))
	}
	want, _, err := DecodeOTLPProto(build(false), AttributeNames{}, Limits{}, nil)
	if err != nil || len(want) != 1 || !want[0].Error || want[0].Key.Tenant != "t" {
		t.Fatalf("clean message: %+v, %v", want, err)
	}
	got, _, err := DecodeOTLPProto(build(true), AttributeNames{}, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertSpansEqual(t, got, want)
}
