package schemas

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// This file holds the reference side of the pdata comparison: a generator of
// OTLP traces built with the Collector's pdata, and refDecode, which maps
// pdata's view of a TracesData to Spans by the rules documented in otlp.go,
// written against pdata's API rather than the wire.

// pdataTypeName names a pdata value type as the decoders' errors do.
func pdataTypeName(t pcommon.ValueType) string {
	switch t {
	case pcommon.ValueTypeStr:
		return "string"
	case pcommon.ValueTypeInt:
		return "int"
	case pcommon.ValueTypeDouble:
		return "double"
	case pcommon.ValueTypeBool:
		return "bool"
	case pcommon.ValueTypeMap:
		return "kvlist"
	case pcommon.ValueTypeSlice:
		return "array"
	case pcommon.ValueTypeBytes:
		return "bytes"
	}
	return "empty"
}

// refProblem is why an attribute cannot be used: kind is ErrInvalid or
// ErrMalformed, nil when fine.
type refProblem struct {
	kind   error
	reason string
}

func refStr(v pcommon.Value) (string, refProblem) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if !utf8.ValidString(v.Str()) {
			return "", refProblem{ErrMalformed, "string is not valid UTF-8"}
		}
		return v.Str(), refProblem{}
	case pcommon.ValueTypeInt:
		return strconv.FormatInt(v.Int(), 10), refProblem{}
	}
	return "", refProblem{ErrInvalid, "want a string, got " + pdataTypeName(v.Type())}
}

func refTokens(v pcommon.Value) (int64, refProblem) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), refProblem{}
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if f != math.Trunc(f) || math.Abs(f) >= math.Pow(2, 63) && f != -math.Pow(2, 63) {
			return 0, refProblem{ErrInvalid, "want a whole number of tokens, got " + strconv.FormatFloat(f, 'g', -1, 64)}
		}
		return int64(f), refProblem{}
	}
	return 0, refProblem{ErrInvalid, "want an int (or a whole double), got " + pdataTypeName(v.Type())}
}

func refNumber(v pcommon.Value) (float64, refProblem) {
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		return v.Double(), refProblem{}
	case pcommon.ValueTypeInt:
		return float64(v.Int()), refProblem{}
	}
	return 0, refProblem{ErrInvalid, "want a double or an int, got " + pdataTypeName(v.Type())}
}

func refFinish(v pcommon.Value) (string, refProblem) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return refStr(v)
	case pcommon.ValueTypeSlice:
		if v.Slice().Len() == 0 {
			return "", refProblem{}
		}
		s, p := refStr(v.Slice().At(0))
		if p.kind != nil {
			p.reason = "first element: " + p.reason
		}
		return s, p
	}
	return "", refProblem{ErrInvalid, "want an array of strings, got " + pdataTypeName(v.Type())}
}

// refAttrs holds the mapped values of one attribute map, absent ones unset.
type refAttrs struct {
	str     map[string]string  // string-valued mapped attributes by name
	num     map[string]float64 // confidence, alignment, ttfc
	tok     map[string]int64   // token counts
	bools   map[string]bool    // gen_ai.request.stream
	bad     string             // the first unusable mapped attribute
	badProb refProblem
}

// refRead maps the attributes named in mapped (name -> kind: "str", "num",
// "tok", "finish") from m, in map order, keeping the first problem. Maps built
// with pdata's Put methods hold each key once.
func refRead(m pcommon.Map, mapped map[string]string) refAttrs {
	ra := refAttrs{str: map[string]string{}, num: map[string]float64{}, tok: map[string]int64{}, bools: map[string]bool{}}
	for k, v := range m.All() {
		kind, ok := mapped[k]
		if !ok || v.Type() == pcommon.ValueTypeEmpty {
			continue
		}
		var p refProblem
		switch kind {
		case "str":
			ra.str[k], p = refStr(v)
		case "finish":
			ra.str[k], p = refFinish(v)
		case "num":
			var f float64
			if f, p = refNumber(v); p.kind == nil {
				ra.num[k] = f
			}
		case "tok":
			var n int64
			if n, p = refTokens(v); p.kind == nil {
				ra.tok[k] = n
			}
		case "inv":
			if v.Type() != pcommon.ValueTypeStr {
				p = refProblem{ErrInvalid, "want a string holding a JSON object, got " + pdataTypeName(v.Type())}
				break
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(v.Str()), &obj); err != nil || obj == nil {
				p = refProblem{ErrInvalid, "want a JSON object"}
				break
			}
			if m, ok := obj["model"].(string); ok {
				ra.str[k] = m
			}
			if b, ok := obj["stream"].(bool); ok {
				ra.bools[k] = b
			}
		case "bool":
			if v.Type() != pcommon.ValueTypeBool {
				p = refProblem{ErrInvalid, "want a bool, got " + pdataTypeName(v.Type())}
			} else {
				ra.bools[k] = v.Bool()
			}
		}
		if p.kind != nil && ra.bad == "" {
			ra.bad, ra.badProb = k, p
		}
	}
	return ra
}

func refError(path, name string, p refProblem) error {
	return wrap(p.kind, &FieldError{Field: path + ".attributes[" + name + "]", Reason: p.reason})
}

// refDecode maps pdata's view of td to the spans fusebox must produce.
func refDecode(td ptrace.Traces, n AttributeNames) ([]Span, DecodeStats, error) {
	n = n.withDefaults()
	spanMapped := map[string]string{
		"gen_ai.operation.name": "str", "gen_ai.provider.name": "str", "gen_ai.system": "str",
		"gen_ai.request.model": "str", "gen_ai.response.model": "str",
		"gen_ai.usage.input_tokens": "tok", "gen_ai.usage.output_tokens": "tok",
		"gen_ai.response.finish_reasons": "finish", "gen_ai.response.time_to_first_chunk": "num",
		"error.type": "str",
		// The variants of other generations of the conventions.
		"gen_ai.response.time_to_first_token": "num", "gen_ai.request.stream": "bool",
		"gen_ai.usage.cache_read.input_tokens": "tok", "gen_ai.usage.cache_read_input_tokens": "tok",
		"gen_ai.usage.cache_creation.input_tokens": "tok", "gen_ai.usage.cache_creation_input_tokens": "tok",
		"gen_ai.usage.reasoning.output_tokens": "tok", "gen_ai.response.id": "str",
		n.Tenant: "str", n.Variant: "str", n.Session: "str", n.Route: "str", n.Confidence: "num", n.Alignment: "num",
		// Instrumentation libraries' own forms.
		"gen_ai.server.time_to_first_token": "num", "gen_ai.server.time_per_output_token": "num",
		"gen_ai.is_streaming": "bool", "llm.is_streaming": "bool",
		"llm.model_name": "str", "llm.invocation_parameters": "inv", "embedding.model_name": "str", "embedding.invocation_parameters": "inv",
		"llm.token_count.prompt": "tok", "llm.token_count.completion": "tok", "llm.provider": "str", "llm.system": "str",
		"llm.finish_reason": "str", "openinference.span.kind": "str",
	}
	configured := map[string]bool{n.Tenant: true, n.Variant: true, n.Session: true, n.Route: true, n.Confidence: true, n.Alignment: true}
	resMapped := map[string]string{"service.name": "str",
		n.Tenant: "str", n.Variant: "str", n.Session: "str", n.Route: "str", n.Confidence: "num", n.Alignment: "num"}

	var out []Span
	var stats DecodeStats
	var rejected []SpanError
	llm := 0
	for ri, rs := range td.ResourceSpans().All() {
		res := refRead(rs.Resource().Attributes(), resMapped)
		for si, ss := range rs.ScopeSpans().All() {
			scope := refScope(ss.Scope().Name(), &stats)
			for pi, span := range ss.Spans().All() {
				stats.SpansSeen++
				a := refRead(span.Attributes(), spanMapped)
				firstOf := func(names ...string) string {
					for _, k := range names {
						if s := a.str[k]; s != "" {
							return s
						}
					}
					return ""
				}
				genAIModel := firstOf("gen_ai.request.model", "gen_ai.response.model") != ""
				model := firstOf("gen_ai.request.model", "llm.invocation_parameters", "embedding.invocation_parameters",
					"gen_ai.response.model", "llm.model_name", "embedding.model_name")
				modelBad := false
				switch a.bad {
				case "gen_ai.request.model", "gen_ai.response.model", "llm.model_name", "llm.invocation_parameters",
					"embedding.model_name", "embedding.invocation_parameters":
					modelBad = true
				}
				kind := a.str["openinference.span.kind"]
				reason := ""
				switch {
				case kind != "" && kind != "LLM" && kind != "EMBEDDING" && !genAIModel:
					reason = UnkeyedNotLLMKind
				case model == "" && !modelBad:
					reason = UnkeyedNoModel
				}
				if reason != "" {
					stats.SkippedNoModel++
					looks := LooksLikeLLMScope(scope)
					for k := range span.Attributes().All() {
						if !configured[k] && (strings.HasPrefix(k, "gen_ai.") || strings.HasPrefix(k, "llm.")) {
							looks = true
						}
					}
					if looks {
						refUnkeyed(&stats, scope, reason)
					}
					continue
				}
				// A bad attribute rejects its span only (of its resource:
				// every span of that resource), counted among the LLM spans.
				llm++
				if a.bad != "" {
					rejected = append(rejected, SpanError{Index: llm - 1, Err: refError(spanPath(ri, si, pi), a.bad, a.badProb)})
					continue
				}
				if res.bad != "" {
					rejected = append(rejected, SpanError{Index: llm - 1, Err: refError(resourcePath(ri), res.bad, res.badProb)})
					continue
				}
				either := func(name string) string {
					if s := a.str[name]; s != "" {
						return s
					}
					return res.str[name]
				}
				sp := Span{
					TraceID:       TraceID(span.TraceID()),
					SpanID:        SpanID(span.SpanID()),
					StartUnixNano: int64(span.StartTimestamp()),
					EndUnixNano:   int64(span.EndTimestamp()),
					Key: Key{Tenant: either(n.Tenant), Service: res.str["service.name"], Model: model,
						Variant: either(n.Variant)},
					Operation:     a.str["gen_ai.operation.name"],
					Provider:      firstOf("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"),
					ResponseModel: firstOf("gen_ai.response.model", "llm.model_name", "embedding.model_name"),
					Route:         either(n.Route),
					SessionID:     either(n.Session),
					FinishReason:  firstOf("gen_ai.response.finish_reasons", "llm.finish_reason"),
					ErrorType:     a.str["error.type"],
					ResponseID:    a.str["gen_ai.response.id"],
					Scope:         scope,
				}
				if sp.Operation == "" {
					sp.Operation = map[string]string{"LLM": "chat", "EMBEDDING": "embeddings"}[kind]
				}
				for _, names := range [][2]string{{"gen_ai.usage.input_tokens", "llm.token_count.prompt"}, {"gen_ai.usage.output_tokens", "llm.token_count.completion"}} {
					for _, k := range names {
						if v, ok := a.tok[k]; ok {
							if strings.Contains(names[0], "input") {
								sp.InputTokens, sp.Has = v, sp.Has|HasInputTokens
							} else {
								sp.OutputTokens, sp.Has = v, sp.Has|HasOutputTokens
							}
							break
						}
					}
				}
				// TTFT: the attributes in seconds, newest names first, then
				// the first-token events (the earliest of each name).
				// A library form's TTFT only within [0, duration] (else
				// none, counted); the GenAI names' as they are (Validate).
				fromEvent, olderTTFT := false, false
				durMs := float64(sp.EndUnixNano-sp.StartUnixNano) / 1e6
				if v, ok := a.num["gen_ai.response.time_to_first_chunk"]; ok {
					sp.TTFTMs, sp.Has = v*1000, sp.Has|HasTTFT
				} else if v, ok := a.num["gen_ai.response.time_to_first_token"]; ok {
					sp.TTFTMs, sp.Has, olderTTFT = v*1000, sp.Has|HasTTFT, true
				} else if v, ok := a.num["gen_ai.server.time_to_first_token"]; ok && !refKnownNotStreamed(a.bools) {
					if v*1000 >= 0 && v*1000 <= durMs {
						sp.TTFTMs, sp.Has = v*1000, sp.Has|HasTTFT
					} else {
						stats.Dropped.ServerTTFT++
					}
				} else {
					for _, name := range []string{"gen_ai.content.completion.chunk", "First Token Stream Event"} {
						first, found := int64(0), false
						for _, ev := range span.Events().All() {
							if ev.Name() == name && (!found || int64(ev.Timestamp()) < first) {
								first, found = int64(ev.Timestamp()), true
							}
						}
						if found {
							fromEvent = true
							switch {
							case first < sp.StartUnixNano:
								stats.Dropped.EventBeforeStart++
							case first > sp.EndUnixNano:
								stats.Dropped.EventAfterEnd++
							default:
								sp.TTFTMs, sp.Has = float64(first-sp.StartUnixNano)/1e6, sp.Has|HasTTFT
							}
							break
						}
					}
				}
				// The newer name wins over the older, whatever their order.
				for _, c := range []struct {
					names [2]string
					dst   *int64
					bit   Fields
				}{
					{[2]string{"gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"}, &sp.CacheReadTokens, HasCacheReadTokens},
					{[2]string{"gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens"}, &sp.CacheWriteTokens, HasCacheWriteTokens},
					{[2]string{"gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning.output_tokens"}, &sp.ReasoningTokens, HasReasoningTokens},
				} {
					for _, name := range c.names {
						if v, ok := a.tok[name]; ok {
							*c.dst, sp.Has = v, sp.Has|c.bit
							break
						}
					}
				}
				streamSet := false
				for _, k := range []string{"gen_ai.request.stream", "gen_ai.is_streaming", "llm.is_streaming", "llm.invocation_parameters", "embedding.invocation_parameters"} {
					if v, ok := a.bools[k]; ok {
						sp.Stream, sp.Has, streamSet = v, sp.Has|HasStream, true
						break
					}
				}
				if !streamSet && fromEvent {
					sp.Stream, sp.Has = true, sp.Has|HasStream
				}
				// A gen_ai.client.inference span is named "{operation} {model}".
				if op, m, ok := strings.Cut(span.Name(), " "); ok && sp.Operation == "" && op != "" &&
					(m == sp.Key.Model || m == sp.ResponseModel) {
					sp.Operation = op
				}
				for _, c := range []struct {
					name string
					dst  *float64
					bit  Fields
				}{{n.Confidence, &sp.Confidence, HasConfidence}, {n.Alignment, &sp.Alignment, HasAlignment}} {
					if v, ok := a.num[c.name]; ok {
						*c.dst, sp.Has = v, sp.Has|c.bit
					} else if v, ok := res.num[c.name]; ok {
						*c.dst, sp.Has = v, sp.Has|c.bit
					}
				}
				if sp.Route == "" {
					sp.Route = sp.Operation
				}
				sp.Error = span.Status().Code() == ptrace.StatusCodeError || sp.ErrorType != ""
				if sp.Error && sp.ErrorType == "" {
					sp.ErrorType = "status_error"
				}
				refDerive(&sp)
				// The older name's TTFT out of range, on a span whose times
				// are valid, rejects the span under that name.
				if olderTTFT && sp.StartUnixNano > 0 && sp.EndUnixNano >= sp.StartUnixNano && sp.DurationMs <= MaxDurationMs {
					reason := ""
					if !(sp.TTFTMs >= 0) || math.IsInf(sp.TTFTMs, 1) {
						reason = "negative, NaN or infinite"
					} else if sp.TTFTMs > sp.DurationMs {
						reason = "longer than the whole call"
					}
					if reason != "" {
						rejected = append(rejected, SpanError{Index: llm - 1, Err: refError(spanPath(ri, si, pi),
							"gen_ai.response.time_to_first_token", refProblem{ErrInvalid, reason})})
						continue
					}
				}
				// openlit's TPOT (seconds), unless 0 or the call was not streamed.
				// A negative or infinite one is counted and left out.
				if v, ok := a.num["gen_ai.server.time_per_output_token"]; ok && v != 0 && (sp.Has&HasStream == 0 || sp.Stream) {
					if v*1000 > 0 && !math.IsInf(v*1000, 1) {
						sp.TPOTMs, sp.Has = v*1000, sp.Has|HasTPOT
					} else {
						stats.Dropped.ServerTPOT++
					}
				}
				out = append(out, sp)
			}
		}
	}
	if len(rejected) > 0 {
		return out, stats, &SpanErrors{Spans: rejected, Total: llm}
	}
	return out, stats, nil
}

// refUnkeyed counts one unkeyed span of scope for reason (the corpus has
// fewer scopes than MaxUnkeyedScopes).
// refScope is the scope name as Span.Scope holds it (docs: at most 128
// bytes, cut before a character that would cross it; no name when not
// UTF-8, counted).
func refScope(name string, st *DecodeStats) string {
	if !utf8.ValidString(name) {
		st.InvalidScopeNames++
		return ""
	}
	out := ""
	for _, r := range name {
		if len(out)+utf8.RuneLen(r) > 128 {
			break
		}
		out += string(r)
	}
	return out
}

func refUnkeyed(st *DecodeStats, scope, reason string) {
	if scope == "" {
		scope = "(none)"
	}
	for i := range st.Unkeyed {
		if st.Unkeyed[i].Scope == scope && st.Unkeyed[i].Reason == reason {
			st.Unkeyed[i].Count++
			return
		}
	}
	st.Unkeyed = append(st.Unkeyed, UnkeyedSpans{Scope: scope, Reason: reason, Count: 1})
}

// refDerive is Span.Derive written out again from the definitions in
// docs/configuration.md (Time per output token), so that the reference does not use the code under test:
// duration = end - start; TPOT = (duration - TTFT) / (output tokens - 1),
// only with a TTFT and at least two output tokens, and not for a call that
// says it was not streamed.
func refDerive(sp *Span) {
	sp.DurationMs = float64(sp.EndUnixNano-sp.StartUnixNano) / 1e6
	sp.Has &^= HasTPOT
	if sp.Has&HasStream != 0 && !sp.Stream {
		return
	}
	if sp.Has&HasTTFT != 0 && sp.Has&HasOutputTokens != 0 && sp.OutputTokens > 1 {
		sp.TPOTMs = (sp.DurationMs - sp.TTFTMs) / float64(sp.OutputTokens-1)
		sp.Has |= HasTPOT
	}
}

// pdataCorpusOptions tunes genPdataTraces.
type pdataCorpusOptions struct {
	// badTypes is the chance that a span or resource gets one mapped
	// attribute of an unusable type.
	badTypes float64
}

// genPdataTraces builds a random TracesData with pdata: several resources
// and scopes, LLM and non-LLM spans, each GenAI attribute present at random
// and in any of the types the decoders accept, ~12 attributes per span with
// unknown extras (arrays, kvlists, bytes, bools), events and links.
func genPdataTraces(rng *rand.Rand, n AttributeNames, opt pdataCorpusOptions) ptrace.Traces {
	n = n.withDefaults()
	td := ptrace.NewTraces()
	for range 1 + rng.IntN(3) {
		rs := td.ResourceSpans().AppendEmpty()
		if rng.IntN(2) == 0 {
			rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
		}
		ra := rs.Resource().Attributes()
		if rng.IntN(8) > 0 {
			ra.PutStr("service.name", pick(rng, genServices))
		}
		ra.PutStr("host.name", "node-"+strconv.Itoa(rng.IntN(50)))
		ra.PutStr("telemetry.sdk.language", pick(rng, []string{"python", "go", "java"}))
		if rng.IntN(3) == 0 {
			ra.PutStr(n.Tenant, pick(rng, genTenants))
		}
		if rng.IntN(4) == 0 {
			ra.PutStr(n.Variant, pick(rng, genVariants))
		}
		if rng.IntN(5) == 0 {
			ra.PutDouble(n.Alignment, rng.Float64())
		}
		if rng.IntN(6) == 0 {
			ra.PutStr(n.Route, pick(rng, genRoutes))
		}
		if rng.IntN(3) == 0 {
			s := ra.PutEmptySlice("process.command_args")
			s.AppendEmpty().SetStr("python")
			s.AppendEmpty().SetStr("app.py")
		}
		if rng.Float64() < opt.badTypes {
			badType(rng, ra, pick(rng, []string{"service.name", n.Tenant, n.Confidence}))
		}
		for range 1 + rng.IntN(3) {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(pick(rng, genScopes))
			ss.Scope().SetVersion("1.2.3")
			ss.Scope().Attributes().PutStr("scope.attr", "x")
			for range rng.IntN(8) {
				genPdataSpan(rng, ss.Spans().AppendEmpty(), n, opt)
			}
		}
	}
	return td
}

// badType sets attribute k of m to a type no mapping accepts.
func badType(rng *rand.Rand, m pcommon.Map, k string) {
	switch rng.IntN(3) {
	case 0:
		m.PutBool(k, true)
	case 1:
		m.PutEmptyMap(k).PutStr("nested", "x")
	default:
		m.PutEmptyBytes(k).FromRaw([]byte{1, 2, 3})
	}
}

func genPdataSpan(rng *rand.Rand, span ptrace.Span, n AttributeNames, opt pdataCorpusOptions) {
	var tid [16]byte
	var sid, pid [8]byte
	for i := range tid {
		tid[i] = byte(rng.UintN(256))
	}
	for i := range sid {
		sid[i], pid[i] = byte(rng.UintN(256)), byte(rng.UintN(256))
	}
	if rng.IntN(30) > 0 { // now and then an empty trace id
		span.SetTraceID(pcommon.TraceID(tid))
	}
	span.SetSpanID(pcommon.SpanID(sid))
	if rng.IntN(2) == 0 {
		span.SetParentSpanID(pcommon.SpanID(pid))
	}
	span.TraceState().FromRaw("vendor=x")
	span.SetFlags(1)
	// gen picks the generation of the conventions the span is written in:
	// 0 the older names, 1 the newer, 2 both (the newer must win).
	gen := rng.IntN(3)
	span.SetName("chat " + pick(rng, genModels))
	span.SetKind(ptrace.SpanKind(rng.IntN(6)))
	start := 1_700_000_000_000_000_000 + rng.Int64N(1e15)
	dur := rng.Int64N(30e9)
	if rng.IntN(40) == 0 {
		dur = -dur // end before start: decodes, fails Validate
	}
	span.SetStartTimestamp(pcommon.Timestamp(start))
	span.SetEndTimestamp(pcommon.Timestamp(start + dur))

	a := span.Attributes()
	llm := rng.IntN(5) > 0
	maybe := func(p int) bool { return rng.IntN(100) < p }
	strOrInt := func(k string, s string) {
		if maybe(5) {
			a.PutInt(k, int64(rng.IntN(1000)))
		} else {
			a.PutStr(k, s)
		}
	}
	if llm {
		switch rng.IntN(4) {
		case 0:
			a.PutStr("gen_ai.request.model", pick(rng, genModels))
		case 1:
			a.PutStr("gen_ai.response.model", pick(rng, genModels))
		default:
			a.PutStr("gen_ai.request.model", pick(rng, genModels))
			a.PutStr("gen_ai.response.model", pick(rng, genModels)+"-0613")
		}
	} else if maybe(10) {
		a.PutStr("gen_ai.request.model", "") // empty model: not an LLM call
	}
	if maybe(80) {
		a.PutStr("gen_ai.operation.name", pick(rng, genOps))
	} else if v, ok := a.Get("gen_ai.request.model"); ok && maybe(70) {
		// A gen_ai.client.inference span without the operation attribute:
		// the operation is only in its name.
		span.SetName(pick(rng, genOps) + " " + v.AsString())
	}
	if gen > 0 && maybe(60) {
		a.PutStr("gen_ai.provider.name", pick(rng, genProviders))
	}
	if gen != 1 && maybe(60) {
		a.PutStr("gen_ai.system", pick(rng, genProviders))
	}
	for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
		if maybe(70) {
			if maybe(10) {
				a.PutDouble(k, float64(rng.IntN(5000)))
			} else {
				a.PutInt(k, int64(rng.IntN(5000)))
			}
		}
	}
	if maybe(60) {
		switch {
		case maybe(10):
			a.PutStr("gen_ai.response.finish_reasons", pick(rng, genFinish))
		default:
			s := a.PutEmptySlice("gen_ai.response.finish_reasons")
			for range rng.IntN(3) {
				s.AppendEmpty().SetStr(pick(rng, genFinish))
			}
		}
	}
	ttft := func(k string) {
		if maybe(10) {
			a.PutInt(k, int64(rng.IntN(3)))
		} else {
			a.PutDouble(k, rng.Float64()*float64(dur)/1e9)
		}
	}
	if gen > 0 && maybe(60) {
		ttft("gen_ai.response.time_to_first_chunk")
	}
	if gen != 1 && maybe(60) {
		ttft("gen_ai.response.time_to_first_token")
	}
	for _, names := range [][2]string{
		{"gen_ai.usage.cache_read_input_tokens", "gen_ai.usage.cache_read.input_tokens"},
		{"gen_ai.usage.cache_creation_input_tokens", "gen_ai.usage.cache_creation.input_tokens"},
		{"", "gen_ai.usage.reasoning.output_tokens"},
	} {
		for g, k := range names {
			if k == "" || gen != 2 && gen != g || !maybe(50) {
				continue
			}
			if maybe(10) {
				a.PutDouble(k, float64(rng.IntN(3000)))
			} else {
				a.PutInt(k, int64(rng.IntN(3000)))
			}
		}
	}
	if maybe(70) {
		a.PutBool("gen_ai.request.stream", maybe(60))
	}
	if maybe(50) {
		strOrInt("gen_ai.response.id", "chatcmpl-"+strconv.Itoa(rng.IntN(1e9)))
	}
	if maybe(10) {
		a.PutStr("error.type", pick(rng, []string{"timeout", "rate_limited", ""}))
	}
	if maybe(70) {
		strOrInt(n.Tenant, pick(rng, genTenants))
	}
	if maybe(40) {
		a.PutStr(n.Variant, pick(rng, genVariants))
	}
	if maybe(50) {
		a.PutStr(n.Session, "sess-"+strconv.Itoa(rng.IntN(1e6)))
	}
	if maybe(30) {
		a.PutStr(n.Route, pick(rng, genRoutes))
	}
	if maybe(50) {
		if maybe(5) {
			a.PutInt(n.Confidence, int64(rng.IntN(2)))
		} else {
			a.PutDouble(n.Confidence, rng.Float64())
		}
	}
	if maybe(40) {
		a.PutDouble(n.Alignment, rng.Float64())
	}
	if maybe(5) {
		a.PutEmpty(n.Variant + ".unset")
	}
	// Unknown extras, up to ~12 attributes in all.
	a.PutStr("http.method", "POST")
	a.PutStr("server.address", "api.example.com")
	a.PutInt("server.port", 443)
	a.PutDouble("gen_ai.request.temperature", rng.Float64())
	if maybe(50) {
		s := a.PutEmptySlice("gen_ai.request.stop_sequences")
		s.AppendEmpty().SetStr("\n\n")
		s.AppendEmpty().SetInt(3)
	}
	if maybe(30) {
		kv := a.PutEmptyMap("llm.metadata")
		kv.PutStr("k", "v")
		kv.PutEmptySlice("nested").AppendEmpty().SetDouble(1.5)
	}
	if maybe(20) {
		a.PutEmptyBytes("payload.digest").FromRaw([]byte("\x00\xff\xfe"))
	}
	// The forms of instrumentation libraries, over (or instead of) the GenAI names.
	span0 := start
	if dur < 0 {
		span0 = start + dur
	}
	// Now and then a library form out of range: an event before the
	// start or after the end, a server TTFT longer than the span or
	// negative, a negative TPOT (the span is kept without it).
	at := func() pcommon.Timestamp {
		if maybe(10) {
			return pcommon.Timestamp(pick(rng, []int64{span0 - 1 - rng.Int64N(1e9), span0 + max(dur, -dur) + 1 + rng.Int64N(1e9)}))
		}
		return pcommon.Timestamp(span0 + rng.Int64N(max(dur, -dur)+1))
	}
	switch rng.IntN(4) {
	case 1: // openlit
		if maybe(60) {
			if maybe(15) {
				a.PutDouble("gen_ai.server.time_to_first_token", pick(rng, []float64{-0.25, float64(dur)/1e9 + 0.0005}))
			} else {
				ttft("gen_ai.server.time_to_first_token")
			}
		}
		if maybe(60) {
			a.PutDouble("gen_ai.server.time_per_output_token", pick(rng, []float64{0, rng.Float64() / 10, -rng.Float64() / 10}))
		}
	case 2: // OpenLLMetry
		if maybe(60) {
			a.PutBool("gen_ai.is_streaming", maybe(60))
		}
		for range rng.IntN(4) {
			ev := span.Events().AppendEmpty()
			ev.SetName("gen_ai.content.completion.chunk")
			ev.SetTimestamp(at())
		}
	case 3: // OpenInference
		if maybe(70) {
			a.PutStr("openinference.span.kind", pick(rng, []string{"LLM", "LLM", "EMBEDDING", "CHAIN", "TOOL"}))
		}
		if maybe(60) {
			a.PutStr("llm.model_name", pick(rng, genModels)+"-2024-07-18")
		}
		if maybe(50) {
			a.PutStr("llm.invocation_parameters", pick(rng, []string{`{"model": "gpt-4o-mini", "max_tokens": 32}`,
				`{"model": "gpt-4o", "stream": true, "stream_options": {"include_usage": true}}`, `{"temperature": 0.5, "stream": false}`, `{}`}))
		}
		if maybe(15) {
			a.PutStr("embedding.model_name", "text-embedding-3-small")
			a.PutStr("embedding.invocation_parameters", `{"model": "text-embedding-3-small", "encoding_format": "base64"}`)
		}
		for _, k := range []string{"llm.token_count.prompt", "llm.token_count.completion"} {
			if maybe(60) {
				a.PutInt(k, int64(rng.IntN(5000)))
			}
		}
		if maybe(50) {
			a.PutStr("llm.system", pick(rng, genProviders))
		}
		if maybe(30) {
			a.PutStr("llm.provider", pick(rng, genProviders))
		}
		if maybe(50) {
			a.PutStr("llm.finish_reason", pick(rng, genFinish))
		}
		if maybe(10) {
			a.PutBool("llm.is_streaming", maybe(50))
		}
		if maybe(50) {
			ev := span.Events().AppendEmpty()
			ev.SetName("First Token Stream Event")
			ev.SetTimestamp(at())
		}
		a.PutStr("llm.input_messages.0.message.content", "never read")
	}
	if rng.Float64() < opt.badTypes {
		badType(rng, a, pick(rng, []string{"llm.invocation_parameters", "gen_ai.server.time_to_first_token", "gen_ai.is_streaming",
			"llm.token_count.prompt", "llm.model_name", "openinference.span.kind", "gen_ai.usage.input_tokens", "gen_ai.response.finish_reasons",
			"gen_ai.operation.name", n.Alignment, "gen_ai.response.time_to_first_chunk", "gen_ai.request.model",
			"gen_ai.response.time_to_first_token", "gen_ai.request.stream", "gen_ai.usage.cache_read_input_tokens",
			"gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.reasoning.output_tokens"}))
	}
	if opt.badTypes > 0 && maybe(2) {
		a.PutDouble("gen_ai.usage.output_tokens", 12.5) // not a whole number: unusable
	}
	for range rng.IntN(3) {
		ev := span.Events().AppendEmpty()
		ev.SetName("gen_ai.content.prompt")
		ev.SetTimestamp(pcommon.Timestamp(start + 1))
		ev.Attributes().PutStr("gen_ai.prompt", "hello")
		ev.Attributes().PutStr("gen_ai.request.model", "event-model-is-ignored")
	}
	if maybe(30) {
		l := span.Links().AppendEmpty()
		l.SetTraceID(pcommon.TraceID(tid))
		l.SetSpanID(pcommon.SpanID(pid))
		l.Attributes().PutStr("link.kind", "retry")
	}
	switch rng.IntN(4) {
	case 0:
		span.Status().SetCode(ptrace.StatusCodeError)
		span.Status().SetMessage("upstream failed")
	case 1:
		span.Status().SetCode(ptrace.StatusCodeOk)
	}
}

// refKnownNotStreamed: the attributes say the call was not streamed (the
// first streaming form present, as the decoders take it); openlit's
// gen_ai.server.time_to_first_token of such a call is its whole duration,
// no TTFT.
func refKnownNotStreamed(bools map[string]bool) bool {
	for _, k := range []string{"gen_ai.request.stream", "gen_ai.is_streaming", "llm.is_streaming", "llm.invocation_parameters", "embedding.invocation_parameters"} {
		if v, ok := bools[k]; ok {
			return !v
		}
	}
	return false
}

// genScopes are the corpus's scope names: libraries', none, and one longer
// than MaxScopeBytes whose 128th byte is inside a character (cut before
// it).
var genScopes = []string{"opentelemetry.instrumentation.openai", "langchain", "net/http", "openinference.instrumentation.openai", "",
	"openlit." + strings.Repeat("x", 119) + "é" + strings.Repeat("y", 80)}
