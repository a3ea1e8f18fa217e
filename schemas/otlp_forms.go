package schemas

import (
	"math"
	"sync/atomic"
	"unicode/utf8"
)

// The forms in which instrumentation libraries write what the GenAI
// conventions name otherwise (openlit's gen_ai.server.*, OpenLLMetry's
// gen_ai.is_streaming and chunk events, OpenInference's llm.* namespace),
// and the count of spans that look like LLM calls but cannot be keyed. The
// order in which the forms count is documented in otlp.go and
// docs/configuration.md.

// libIDs are the attributes of libState: finishSpan applies them only when
// a span has one.
const libIDs uint64 = 1<<idLLMModel | 1<<idLLMInvocation | 1<<idEmbModel | 1<<idEmbInvocation |
	1<<idLLMPromptTokens | 1<<idLLMOutputTokens | 1<<idLLMProvider | 1<<idLLMSystem | 1<<idLLMFinish | 1<<idOISpanKind

// Span event names that carry the time of the first token.
const (
	// chunkEventName is OpenLLMetry's event, one per streamed chunk: the
	// first one's time minus the span start is the TTFT.
	chunkEventName = "gen_ai.content.completion.chunk"
	// firstTokenEventName is OpenInference's event at the first streamed token.
	firstTokenEventName = "First Token Stream Event"
)

// Reasons of DecodeStats.Unkeyed.
const (
	// UnkeyedNoModel: the span has no model in any form fusebox reads.
	UnkeyedNoModel = "no_model"
	// UnkeyedNotLLMKind: an OpenInference span whose openinference.span.kind
	// is neither LLM nor EMBEDDING (CHAIN, TOOL, RETRIEVER, AGENT, ...):
	// not an LLM call.
	UnkeyedNotLLMKind = "not_llm_kind"
)

// MaxUnkeyedScopes bounds the distinct scopes DecodeStats.Unkeyed (and the
// consumer's counters built from it) name; the spans of further scopes are
// counted under the scope UnkeyedOtherScope, "(other)".
const MaxUnkeyedScopes = 32

// UnkeyedOtherScope is the scope the spans past MaxUnkeyedScopes count
// under, and UnkeyedNoScope that of spans without a scope name. Both are
// in parentheses, which no instrumentation library's name has: a library
// named "other" or "none" keeps its own label.
const (
	UnkeyedOtherScope = "(other)"
	UnkeyedNoScope    = "(none)"
)

// MaxScopeBytes is the longest instrumentation scope name kept
// (Span.Scope, the scope label of fusebox_spans_unkeyed_total, the no
// samples evidence): a longer one is cut to at most this many bytes, at a
// UTF-8 character boundary. Library names are far shorter; the cut keeps
// a runaway name from costing every keyed span and checkpoint its length.
const MaxScopeBytes = 128

// scopeOf returns the scope name b as Span.Scope holds it: cut to
// MaxScopeBytes at a character boundary. A name that is not valid UTF-8
// is no name (""; ok false, for the count), rather than a reason to
// reject the message: the scope only labels its spans.
func scopeOf(b []byte) (name string, ok bool) {
	if !utf8.Valid(b) {
		return "", false
	}
	if len(b) > MaxScopeBytes {
		n := MaxScopeBytes
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	return internScope(b), true
}

// UnkeyedSpans counts the spans of one instrumentation scope that looked
// like LLM calls (see LooksLikeLLMScope and DecodeStats.Unkeyed) but were
// skipped for Reason.
type UnkeyedSpans struct {
	Scope  string // the instrumentation scope name (UnkeyedNoScope when none)
	Reason string // UnkeyedNoModel or UnkeyedNotLLMKind
	Count  int
	// Attributes names (at most 8) the first such span had that made it look
	// like an LLM call: its gen_ai.* and llm.* attribute keys (and
	// openinference.span.kind=<kind> for UnkeyedNotLLMKind).
	Attributes []string
}

// llmScopeWords are the words of an instrumentation scope name that mark
// a GenAI or OpenInference instrumentation library.
var llmScopeWords = [...]string{"openai", "openinference", "gen_ai", "genai", "openlit", "traceloop",
	"langchain", "anthropic", "bedrock", "vertexai", "llm"}

// LooksLikeLLMScope reports whether an instrumentation scope name is that of
// a GenAI or OpenInference instrumentation library: it contains, ignoring
// case, one of "openai", "openinference", "gen_ai", "genai", "openlit",
// "traceloop", "langchain", "anthropic", "bedrock", "vertexai", "llm".
func LooksLikeLLMScope(name string) bool {
	for _, w := range llmScopeWords {
		if containsFold(name, w) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word w,
// ignoring the case of s, without allocating.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// setScope makes name the scope of the spans read next.
func (mp *mapper) setScope(name string) {
	if name == mp.scope && mp.scopeSet {
		return
	}
	mp.scope, mp.scopeSet = name, true
	mp.scopeLLM = LooksLikeLLMScope(name)
}

// noteKey remembers an unmapped attribute key of the span being read when
// it is a gen_ai.* or llm.* one: such a span looks like an LLM call. key
// must stay valid until the span is finished (it points into the message).
func (st *spanState) noteKey(key []byte) {
	if !isLLMKey(key) {
		return
	}
	st.lib.llmKey = true
	if st.lib.nKeys < maxLLMKeys {
		st.lib.keys[st.lib.nKeys] = key
		st.lib.nKeys++
	}
}

// isLLMKey reports whether an attribute key is a gen_ai.* or llm.* one.
func isLLMKey(k []byte) bool {
	switch {
	case len(k) > 7 && k[0] == 'g':
		return string(k[:7]) == "gen_ai."
	case len(k) > 4 && k[0] == 'l':
		return string(k[:4]) == "llm."
	}
	return false
}

// noteEvent records a span event of the span being read: its name and time
// (Unix ns). Only the first-token events are kept, the earliest of each.
func (st *spanState) noteEvent(name []byte, t int64) {
	switch string(name) {
	case chunkEventName:
		if st.lib.has&libChunk == 0 || t < st.lib.chunkNs {
			st.lib.chunkNs = t
			st.lib.has |= libChunk
		}
	case firstTokenEventName:
		if st.lib.has&libFirstTok == 0 || t < st.lib.firstTokNs {
			st.lib.firstTokNs = t
			st.lib.has |= libFirstTok
		}
	}
}

// libAttr applies one of the numeric, bool or JSON library attributes.
func (mp *mapper) libAttr(l *libState, id attrID, v *attrVal) problem {
	var p problem
	switch id {
	case idServerTTFT:
		var sec float64
		if sec, p = number(v); p.kind == nil {
			l.serverTTFTMs = sec * 1000
			l.has |= libServerTTFT
		}
	case idServerTPOT:
		var sec float64
		if sec, p = number(v); p.kind == nil {
			l.serverTPOTMs = sec * 1000
			l.has |= libServerTPOT
		}
	case idIsStreaming, idLLMIsStreaming:
		if v.kind != kindBool {
			return wrongType("a bool", v.kind)
		}
		if id == idIsStreaming {
			l.isStreaming = v.i != 0
			l.has |= libIsStreaming
		} else {
			l.llmStreaming = v.i != 0
			l.has |= libLLMStreaming
		}
	case idLLMPromptTokens:
		if l.promptTok, p = tokens(v); p.kind == nil {
			l.has |= libPromptTok
		}
	case idLLMOutputTokens:
		if l.complTok, p = tokens(v); p.kind == nil {
			l.has |= libComplTok
		}
	case idLLMInvocation, idEmbInvocation:
		if v.kind != kindString {
			return wrongType("a string holding a JSON object", v.kind)
		}
		model, stream, hasStream, reason := invocationParams(v.str)
		if reason != "" {
			return problem{ErrInvalid, reason}
		}
		if hasStream {
			l.invStream = stream
			l.has |= libInvStream
		}
		var m string
		if m, p = mp.keep(id, model); p.kind == nil {
			if id == idLLMInvocation {
				l.invModel = m
			} else {
				l.embInv = m
			}
		}
	}
	return p
}

// invocationParams reads the "model" string and the "stream" bool of an
// OpenInference invocation-parameters JSON object (the request's keyword
// arguments, content excluded by the library); the other members are
// checked for syntax only. A text that is not a JSON object, or a model
// that is not a string or a stream that is not a bool, gives a reason.
func invocationParams(b []byte) (model []byte, stream, hasStream bool, reason string) {
	r := jsonReader{b: b}
	if err := r.open('{'); err != nil {
		return nil, false, false, "want a JSON object: " + err.Error()
	}
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return nil, false, false, "want a JSON object: " + err.Error()
		}
		if !more {
			break
		}
		switch {
		case string(k) == "model" && r.peek() == '"':
			s, escaped, err := r.str()
			if err != nil {
				return nil, false, false, "model: " + err.Error()
			}
			model = s
			if escaped { // the reader's scratch: keep a copy
				model = append([]byte(nil), s...)
			}
		case string(k) == "model" && !r.null():
			return nil, false, false, "model: want a string, got " + r.what()
		case string(k) == "stream" && (r.peek() == 't' || r.peek() == 'f'):
			if stream, err = r.boolean(); err != nil {
				return nil, false, false, "stream: " + err.Error()
			}
			hasStream = true
		default:
			if err := r.skip(); err != nil {
				return nil, false, false, "want a JSON object: " + err.Error()
			}
		}
	}
	if err := r.end(); err != nil {
		return nil, false, false, "want a JSON object: " + err.Error()
	}
	return model, stream, hasStream, ""
}

// libNames applies OpenInference's llm.* / embedding.* names where the
// GenAI ones are absent: the request model from the invocation parameters,
// else the model name (the response model, which is ResponseModel either
// way); tokens; provider (llm.provider, else llm.system); the finish
// reason; the operation from openinference.span.kind.
func (mp *mapper) libNames(sp *Span, st *spanState) {
	l := &st.lib
	oiModel, inv := l.llmModel, l.invModel
	if oiModel == "" {
		oiModel = l.embModel
	}
	if inv == "" {
		inv = l.embInv
	}
	if sp.Key.Model == "" {
		sp.Key.Model = inv
	}
	if sp.ResponseModel == "" {
		sp.ResponseModel = oiModel
	}
	if sp.Provider == "" {
		sp.Provider = l.provider
	}
	if sp.Provider == "" {
		sp.Provider = l.system
	}
	if sp.Has&HasInputTokens == 0 && l.has&libPromptTok != 0 {
		sp.InputTokens = l.promptTok
		sp.Has |= HasInputTokens
	}
	if sp.Has&HasOutputTokens == 0 && l.has&libComplTok != 0 {
		sp.OutputTokens = l.complTok
		sp.Has |= HasOutputTokens
	}
	if sp.FinishReason == "" {
		sp.FinishReason = l.finish
	}
	if sp.Operation == "" {
		switch l.kind {
		case "LLM":
			sp.Operation = "chat"
		case "EMBEDDING":
			sp.Operation = "embeddings"
		}
	}
}

// libTiming applies the TTFT and streaming forms past the GenAI names:
// TTFT from gen_ai.server.time_to_first_token, else the first
// gen_ai.content.completion.chunk event, else the First Token Stream Event
// (an event's time minus the span start); streaming from
// gen_ai.is_streaming, else llm.is_streaming, else the invocation
// parameters' "stream", else true when the TTFT came from a stream event.
//
// The form that applies is taken only when 0 <= TTFT <= the span's
// duration; else the span gets no TTFT (l.dropped says why) rather than
// fail Span.Validate as a whole: a library's event clock or rounding
// (openlit's 2.0005 s on a 2 s span) must not cost the span its duration,
// error and tokens. The next form is not tried: the one that applies is
// what the library measured.
func (mp *mapper) libTiming(sp *Span, st *spanState) {
	l := &st.lib
	fromEvent := false
	if sp.Has&HasTTFT == 0 {
		ttft, why, found := 0.0, droppedNone, true
		switch {
		case l.has&libServerTTFT != 0 && !knownNotStreamed(sp, l):
			// openlit writes gen_ai.server.time_to_first_token on plain
			// calls and embeddings too, as the whole call's duration: a
			// non-streamed call has no first token before its answer, and
			// counting its duration as a TTFT would put every plain call's
			// latency into a ttft_ms SLO's tail.
			ttft = l.serverTTFTMs
			if !(ttft >= 0 && ttft <= spanMs(sp)) { // NaN too
				why = droppedServerTTFT
			}
		case l.has&libChunk != 0:
			ttft, fromEvent, why = float64(l.chunkNs-sp.StartUnixNano)/1e6, true, eventDrop(l.chunkNs, sp)
		case l.has&libFirstTok != 0:
			ttft, fromEvent, why = float64(l.firstTokNs-sp.StartUnixNano)/1e6, true, eventDrop(l.firstTokNs, sp)
		default:
			found = false
		}
		switch {
		case why != droppedNone:
			l.dropped = why
		case found:
			sp.TTFTMs = ttft
			sp.Has |= HasTTFT
		}
	}
	if sp.Has&HasStream != 0 {
		return
	}
	switch {
	case l.has&libIsStreaming != 0:
		sp.Stream = l.isStreaming
	case l.has&libLLMStreaming != 0:
		sp.Stream = l.llmStreaming
	case l.has&libInvStream != 0:
		sp.Stream = l.invStream
	case fromEvent:
		sp.Stream = true
	default:
		return
	}
	sp.Has |= HasStream
}

// spanMs is the span's duration in ms, as Span.Derive computes it.
func spanMs(sp *Span) float64 { return float64(sp.EndUnixNano-sp.StartUnixNano) / 1e6 }

// eventDrop is why a first-token event at t gives the span no TTFT:
// droppedNone when it lies within the span.
func eventDrop(t int64, sp *Span) uint8 {
	switch {
	case t < sp.StartUnixNano:
		return droppedEventBeforeStart
	case t > sp.EndUnixNano:
		return droppedEventAfterEnd
	}
	return droppedNone
}

// knownNotStreamed reports whether the span's attributes say the call was
// not streamed (gen_ai.request.stream, gen_ai.is_streaming,
// llm.is_streaming or the invocation parameters' "stream", in that order).
func knownNotStreamed(sp *Span, l *libState) bool {
	switch {
	case sp.Has&HasStream != 0:
		return !sp.Stream
	case l.has&libIsStreaming != 0:
		return !l.isStreaming
	case l.has&libLLMStreaming != 0:
		return !l.llmStreaming
	case l.has&libInvStream != 0:
		return !l.invStream
	}
	return false
}

// explicitTPOT applies gen_ai.server.time_per_output_token (openlit: the
// mean time between streamed chunks, in seconds) in place of the derived
// TPOT, unless it is 0 (openlit writes 0 when it measured nothing: a
// non-streamed call, a single chunk) or the call was not streamed (as
// Derive).
//
// A negative or infinite (or NaN) value is left out and counted
// (DecodeStats.Dropped.ServerTPOT): the span keeps the derived TPOT.
func (mp *mapper) explicitTPOT(sp *Span, st *spanState) {
	if st.lib.serverTPOTMs == 0 || sp.Has&HasStream != 0 && !sp.Stream {
		return
	}
	if !(st.lib.serverTPOTMs > 0 && !math.IsInf(st.lib.serverTPOTMs, 1)) {
		mp.stats.Dropped.ServerTPOT++
		return
	}
	sp.TPOTMs = st.lib.serverTPOTMs
	sp.Has |= HasTPOT
}

// notLLM returns why the span just read is not an LLM call fusebox can
// key, "" when it is one. genAIModel says a GenAI model attribute was set.
func notLLM(sp *Span, st *spanState, genAIModel, modelBad bool) string {
	if k := st.lib.kind; k != "" && k != "LLM" && k != "EMBEDDING" && !genAIModel {
		return UnkeyedNotLLMKind
	}
	if sp.Key.Model == "" && !modelBad {
		return UnkeyedNoModel
	}
	return ""
}

// unkeyed counts the span just read, which looks like an LLM call, as
// skipped for reason under its scope.
func (mp *mapper) unkeyed(st *spanState, reason string) {
	u := mp.stats.Unkeyed
	scope := mp.scope
	if scope == "" {
		scope = UnkeyedNoScope
	}
	if !hasScope(u, scope) && distinctScopes(u) >= MaxUnkeyedScopes {
		scope = UnkeyedOtherScope
	}
	for i := range u {
		if u[i].Scope == scope && u[i].Reason == reason {
			u[i].Count++
			return
		}
	}
	var names []string
	for id := attrID(0); id < numAttrIDs; id++ {
		if st.seen&llmIDs&(1<<id) != 0 && len(names) < 8 {
			names = append(names, mp.m.names[id])
		}
	}
	for _, k := range st.lib.keys[:st.lib.nKeys] {
		if len(names) < 8 {
			names = append(names, string(k))
		}
	}
	if reason == UnkeyedNotLLMKind {
		names = append(names, "openinference.span.kind="+st.lib.kind)
	}
	mp.stats.Unkeyed = append(u, UnkeyedSpans{Scope: scope, Reason: reason, Count: 1, Attributes: names})
}

func hasScope(u []UnkeyedSpans, scope string) bool {
	for i := range u {
		if u[i].Scope == scope {
			return true
		}
	}
	return false
}

func distinctScopes(u []UnkeyedSpans) int {
	n := 0
	for i := range u {
		if !hasScope(u[:i], u[i].Scope) {
			n++
		}
	}
	return n
}

// scopeNames interns instrumentation scope names across decode calls: a
// deployment sees a handful of libraries, and every message repeats their
// names, so a steady stream of messages allocates none. Each slot holds the
// last name hashed to it (a collision only costs an allocation).
var scopeNames [64]atomic.Pointer[string]

// internScope returns b as a string, from scopeNames when it is there.
func internScope(b []byte) string {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &scopeNames[h%uint32(len(scopeNames))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}
