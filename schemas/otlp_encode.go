package schemas

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// EncodeOTLPProto appends to dst an OTLP TracesData in protobuf holding spans,
// and returns the extended slice. It is the inverse of DecodeOTLPProto for the
// spans that decoder produces: decoding the result with the same names gives
// the same spans back.
//
// Layout: one ResourceSpans per distinct (Key.Service, Scope), in order of
// first appearance, with service.name as its only resource attribute; one
// ScopeSpans (its scope named Scope, or unnamed when Scope is "") holding
// those spans in input order. Everything
// else, the tenant included, is written as span attributes: a tenant is a
// property of the request, and one service commonly serves many tenants.
// Optional fields are written only when present (Has bits, non-empty
// strings); Route only when it differs from Operation, ErrorType only when it
// is not the "status_error" stand-in; Error sets status code ERROR. The span
// name is "<operation> <model>" as the GenAI conventions suggest, and its kind
// is CLIENT. TTFT is written in seconds, chosen so that the decoder's
// seconds*1000 gives back TTFTMs exactly; a TPOT that is not the derived one
// (a producer's, see otlp.go) as gen_ai.server.time_per_output_token.
func EncodeOTLPProto(dst []byte, spans []Span, names AttributeNames) []byte {
	names = names.withDefaults()
	for _, g := range groupByService(spans) {
		var rs, res, ss, scope int
		dst, rs = beginMsg(dst, 1) // TracesData.resource_spans
		if g.service != "" {
			dst, res = beginMsg(dst, 1) // ResourceSpans.resource
			dst = appendKV(dst, 1, "service.name", attrVal{kind: kindString}, g.service)
			dst = endMsg(dst, res)
		}
		dst, ss = beginMsg(dst, 2)    // ResourceSpans.scope_spans
		dst, scope = beginMsg(dst, 1) // ScopeSpans.scope
		if g.scope != "" {
			dst = protowire.AppendTag(dst, 1, protowire.BytesType)
			dst = protowire.AppendString(dst, g.scope)
		}
		dst = endMsg(dst, scope)
		for _, i := range g.spans {
			dst = appendProtoSpan(dst, &spans[i], &names)
		}
		dst = endMsg(dst, ss)
		dst = endMsg(dst, rs)
	}
	return dst
}

// otlpSpanKindClient is Span.kind CLIENT: an LLM call is a client span.
const otlpSpanKindClient = 3

// serviceGroup is the spans of one service and scope, by index into the input.
type serviceGroup struct {
	service, scope string
	spans          []int
}

func groupByService(spans []Span) []serviceGroup {
	var groups []serviceGroup
	type gk struct{ service, scope string }
	index := map[gk]int{}
	for i := range spans {
		k := gk{spans[i].Key.Service, spans[i].Scope}
		g, ok := index[k]
		if !ok {
			g = len(groups)
			index[k] = g
			groups = append(groups, serviceGroup{service: k.service, scope: k.scope})
		}
		groups[g].spans = append(groups[g].spans, i)
	}
	return groups
}

// beginMsg appends the tag of a LEN field and a one-byte length placeholder;
// endMsg fills it in, moving the body when the length needs more bytes.
func beginMsg(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = append(b, 0)
	return b, len(b)
}

func endMsg(b []byte, start int) []byte {
	n := len(b) - start
	if size := protowire.SizeVarint(uint64(n)); size > 1 {
		b = append(b, make([]byte, size-1)...)
		copy(b[start+size-1:], b[start:start+n])
	}
	protowire.AppendVarint(b[:start-1], uint64(n)) // writes in place: b is long enough
	return b
}

// spanAttr is one attribute the encoders write for a span.
type encAttr struct {
	key string
	v   attrVal
	s   string // the string for kindString (and the array's only element)
}

// spanAttrs lists the attributes that carry sp's fields, in a fixed order.
func spanAttrs(sp *Span, n *AttributeNames, out []encAttr) []encAttr {
	str := func(key, s string) {
		if s != "" {
			out = append(out, encAttr{key: key, v: attrVal{kind: kindString}, s: s})
		}
	}
	str("gen_ai.operation.name", sp.Operation)
	str("gen_ai.provider.name", sp.Provider)
	str("gen_ai.request.model", sp.Key.Model)
	str("gen_ai.response.model", sp.ResponseModel)
	if sp.Has&HasInputTokens != 0 {
		out = append(out, encAttr{key: "gen_ai.usage.input_tokens", v: attrVal{kind: kindInt, i: sp.InputTokens}})
	}
	if sp.Has&HasOutputTokens != 0 {
		out = append(out, encAttr{key: "gen_ai.usage.output_tokens", v: attrVal{kind: kindInt, i: sp.OutputTokens}})
	}
	if sp.FinishReason != "" {
		out = append(out, encAttr{key: "gen_ai.response.finish_reasons", v: attrVal{kind: kindArray}, s: sp.FinishReason})
	}
	if sp.Has&HasTTFT != 0 {
		out = append(out, encAttr{key: "gen_ai.response.time_to_first_chunk", v: attrVal{kind: kindDouble, f: secondsFor(sp.TTFTMs)}})
	}
	// A TPOT the producer gave (openlit's) rather than the derived one is
	// written in openlit's attribute, so that it decodes back.
	if d := *sp; sp.Has&HasTPOT != 0 && sp.TPOTMs != 0 {
		if d.Derive(); d.Has&HasTPOT == 0 || math.Float64bits(d.TPOTMs) != math.Float64bits(sp.TPOTMs) {
			out = append(out, encAttr{key: "gen_ai.server.time_per_output_token", v: attrVal{kind: kindDouble, f: secondsFor(sp.TPOTMs)}})
		}
	}
	for _, t := range [...]struct {
		has Fields
		key string
		v   int64
	}{
		{HasCacheReadTokens, "gen_ai.usage.cache_read.input_tokens", sp.CacheReadTokens},
		{HasCacheWriteTokens, "gen_ai.usage.cache_creation.input_tokens", sp.CacheWriteTokens},
		{HasReasoningTokens, "gen_ai.usage.reasoning.output_tokens", sp.ReasoningTokens},
	} {
		if sp.Has&t.has != 0 {
			out = append(out, encAttr{key: t.key, v: attrVal{kind: kindInt, i: t.v}})
		}
	}
	if sp.Has&HasStream != 0 {
		var i int64
		if sp.Stream {
			i = 1
		}
		out = append(out, encAttr{key: "gen_ai.request.stream", v: attrVal{kind: kindBool, i: i}})
	}
	str("gen_ai.response.id", sp.ResponseID)
	if sp.ErrorType != statusErrorType {
		str("error.type", sp.ErrorType)
	}
	str(n.Tenant, sp.Key.Tenant)
	str(n.Variant, sp.Key.Variant)
	str(n.Session, sp.SessionID)
	if sp.Route != sp.Operation {
		str(n.Route, sp.Route)
	}
	if sp.Has&HasConfidence != 0 {
		out = append(out, encAttr{key: n.Confidence, v: attrVal{kind: kindDouble, f: sp.Confidence}})
	}
	if sp.Has&HasAlignment != 0 {
		out = append(out, encAttr{key: n.Alignment, v: attrVal{kind: kindDouble, f: sp.Alignment}})
	}
	return out
}

// secondsFor returns a double s with s*1000 == ms when one lies within an ulp
// of ms/1000, so that the decoder's conversion gives ms back exactly.
func secondsFor(ms float64) float64 {
	s := ms / 1000
	if s*1000 == ms {
		return s
	}
	for _, c := range [2]float64{math.Nextafter(s, math.Inf(1)), math.Nextafter(s, math.Inf(-1))} {
		if c*1000 == ms {
			return c
		}
	}
	return s
}

// spanName is the span name the encoders write.
func spanName(sp *Span) string {
	switch {
	case sp.Operation == "":
		return sp.Key.Model
	case sp.Key.Model == "":
		return sp.Operation
	}
	return sp.Operation + " " + sp.Key.Model
}

func appendProtoSpan(b []byte, sp *Span, n *AttributeNames) []byte {
	var start int
	b, start = beginMsg(b, 2) // ScopeSpans.spans
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, sp.TraceID[:])
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, sp.SpanID[:])
	if name := spanName(sp); name != "" {
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendString(b, name)
	}
	b = protowire.AppendTag(b, 6, protowire.VarintType)
	b = protowire.AppendVarint(b, otlpSpanKindClient)
	b = protowire.AppendTag(b, 7, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(sp.StartUnixNano))
	b = protowire.AppendTag(b, 8, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(sp.EndUnixNano))
	var buf [24]encAttr
	for _, a := range spanAttrs(sp, n, buf[:0]) {
		b = appendKV(b, 9, a.key, a.v, a.s)
	}
	if sp.Error {
		var st int
		b, st = beginMsg(b, 15)
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, statusCodeError)
		b = endMsg(b, st)
	}
	return endMsg(b, start)
}

// appendKV appends a KeyValue as field num: v's kind and number, s for strings
// and for the only element of an array.
func appendKV(b []byte, num protowire.Number, key string, v attrVal, s string) []byte {
	var kv, val int
	b, kv = beginMsg(b, num)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, key)
	b, val = beginMsg(b, 2)
	switch v.kind {
	case kindString:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, s)
	case kindBool:
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v.i))
	case kindInt:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v.i))
	case kindDouble:
		b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(v.f))
	case kindArray:
		var arr, elem int
		b, arr = beginMsg(b, 5)
		b, elem = beginMsg(b, 1)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, s)
		b = endMsg(b, elem)
		b = endMsg(b, arr)
	}
	b = endMsg(b, val)
	return endMsg(b, kv)
}
