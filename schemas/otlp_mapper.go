package schemas

import (
	"bytes"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// The mapping of OTLP attributes onto Spans, shared by the protobuf and JSON
// decoders: string interning, the accepted types, fallbacks, errors.

// internWays is how many distinct recent values each field remembers: a batch
// of spans mostly repeats a few models, tenants and operations.
const internWays = 4

// internSet hands out one string per distinct recent value so that a batch
// allocates each repeated value once.
type internSet struct {
	s    [internWays]string
	next uint8 // the slot to fill next, modulo internWays
	last uint8 // the slot of the last hit, checked first
}

// mapper holds what both OTLP decoders share: the key matcher, the limits, the
// output and the string caches.
type mapper struct {
	m     keyMatcher
	lim   Limits
	stats DecodeStats
	dst   []Span
	cache [numAttrIDs]internSet
	// llm counts the message's LLM spans so far (rejected ones too);
	// rejected lists those dropped for a bad attribute (see reject).
	llm      int
	rejected []SpanError
	// scope is the instrumentation scope name of the spans being read;
	// scopeLLM whether it names a GenAI instrumentation (LooksLikeLLMScope).
	scope              string
	scopeSet, scopeLLM bool
}

// reject drops the span just read (the last of mp.dst) for err, a bad
// attribute of its own or of its resource: only that span is lost, not the
// message's valid ones.
func (mp *mapper) reject(err error) {
	mp.dst = mp.dst[:len(mp.dst)-1]
	mp.rejected = append(mp.rejected, SpanError{Index: mp.llm - 1, Err: err})
}

func (mp *mapper) init(names AttributeNames, lim Limits, dst []Span) {
	mp.m.init(names)
	mp.lim = lim
	mp.dst = dst
}

// keep returns b as a string for field id, reusing a recent equal string.
// It reports a problem when b is not valid UTF-8. It checks the common case,
// the same value as last time, before anything else.
func (mp *mapper) keep(id attrID, b []byte) (string, problem) {
	c := &mp.cache[id]
	if s := c.s[c.last&(internWays-1)]; len(s) == len(b) && len(b) > 0 && s == string(b) {
		return s, problem{}
	}
	return mp.keepSlow(id, b)
}

func (mp *mapper) keepSlow(id attrID, b []byte) (string, problem) {
	if len(b) == 0 {
		return "", problem{}
	}
	if id == idSession || id == idResponseID { // all but unique per span: caching would only cost
		if !utf8.Valid(b) {
			return "", problem{ErrMalformed, "string is not valid UTF-8"}
		}
		return string(b), problem{}
	}
	c := &mp.cache[id]
	for i := range c.s {
		if c.s[i] == string(b) {
			c.last = uint8(i)
			return c.s[i], problem{}
		}
	}
	if !utf8.Valid(b) {
		return "", problem{ErrMalformed, "string is not valid UTF-8"}
	}
	s := string(b)
	c.last = c.next % internWays
	c.s[c.last] = s
	c.next++
	return s, problem{}
}

// str reads a string field: a string, or an int rendered in decimal.
func (mp *mapper) str(id attrID, v *attrVal) (string, problem) {
	switch v.kind {
	case kindString:
		return mp.keep(id, v.str)
	case kindInt:
		var buf [20]byte
		return mp.keep(id, strconv.AppendInt(buf[:0], v.i, 10))
	}
	return "", wrongType("a string", v.kind)
}

func wrongType(want string, got valKind) problem {
	return problem{ErrInvalid, "want " + want + ", got " + got.String()}
}

// tokens reads a token count: an int, or a double holding a whole number.
func tokens(v *attrVal) (int64, problem) {
	switch v.kind {
	case kindInt:
		return v.i, problem{}
	case kindDouble:
		// 2^63 is exactly representable; anything at or past it does not fit an int64.
		if v.f != math.Trunc(v.f) || v.f >= 1<<63 || v.f < -(1<<63) {
			return 0, problem{ErrInvalid, "want a whole number of tokens, got " + strconv.FormatFloat(v.f, 'g', -1, 64)}
		}
		return int64(v.f), problem{}
	}
	return 0, wrongType("an int (or a whole double)", v.kind)
}

// number reads a double or an int as float64.
func number(v *attrVal) (float64, problem) {
	switch v.kind {
	case kindDouble:
		return v.f, problem{}
	case kindInt:
		return float64(v.i), problem{}
	}
	return 0, wrongType("a double or an int", v.kind)
}

// finishReason reads the first finish reason of an array (or a lone string).
func (mp *mapper) finishReason(v *attrVal) (string, problem) {
	switch v.kind {
	case kindString:
		return mp.keep(idFinishReasons, v.str)
	case kindArray:
		if !v.hasFirst {
			return "", problem{}
		}
		if v.firstKind == kindString {
			return mp.keep(idFinishReasons, v.firstStr)
		}
		first := attrVal{kind: v.firstKind, str: v.firstStr, i: v.firstI}
		s, p := mp.str(idFinishReasons, &first)
		if p.kind != nil {
			p.reason = "first element: " + p.reason
		}
		return s, p
	}
	return "", wrongType("an array of strings", v.kind)
}

// spanString returns the Span (or spanState) string that attribute id
// fills, nil for the numeric ones.
func spanString(sp *Span, st *spanState, id attrID) *string {
	switch id {
	case idOperation:
		return &sp.Operation
	case idProvider:
		return &sp.Provider
	case idSystem:
		return &st.system
	case idRequestModel:
		return &sp.Key.Model
	case idResponseModel:
		return &sp.ResponseModel
	case idErrorType:
		return &sp.ErrorType
	case idTenant:
		return &sp.Key.Tenant
	case idVariant:
		return &sp.Key.Variant
	case idSession:
		return &sp.SessionID
	case idRoute:
		return &sp.Route
	case idResponseID:
		return &sp.ResponseID
	case idLLMModel:
		return &st.lib.llmModel
	case idEmbModel:
		return &st.lib.embModel
	case idLLMProvider:
		return &st.lib.provider
	case idLLMSystem:
		return &st.lib.system
	case idLLMFinish:
		return &st.lib.finish
	case idOISpanKind:
		return &st.lib.kind
	}
	return nil
}

// spanAttr applies one span attribute whose key matched hit.
func (mp *mapper) spanAttr(sp *Span, st *spanState, hit uint64, v *attrVal) {
	hit &^= st.seen
	if hit == 0 {
		return
	}
	st.seen |= hit
	if v.kind == kindEmpty {
		return
	}
	for hit != 0 {
		id := attrID(bits.TrailingZeros64(hit))
		hit &= hit - 1
		var p problem
		if dst := spanString(sp, st, id); dst != nil {
			if v.kind == kindString {
				*dst, p = mp.keep(id, v.str)
			} else {
				*dst, p = mp.str(id, v)
			}
			st.bad.note(id, p)
			continue
		}
		switch id {
		case idInputTokens:
			if sp.InputTokens, p = tokens(v); p.kind == nil {
				sp.Has |= HasInputTokens
			}
		case idOutputTokens:
			if sp.OutputTokens, p = tokens(v); p.kind == nil {
				sp.Has |= HasOutputTokens
			}
		case idFinishReasons:
			sp.FinishReason, p = mp.finishReason(v)
		case idTTFC:
			var sec float64
			if sec, p = number(v); p.kind == nil {
				sp.TTFTMs = sec * 1000
				sp.Has |= HasTTFT
			}
		case idTTFT:
			var sec float64
			if sec, p = number(v); p.kind == nil {
				st.ttftMs = sec * 1000
				st.has |= HasTTFT
			}
		case idStream:
			if v.kind != kindBool {
				p = wrongType("a bool", v.kind)
			} else {
				sp.Stream = v.i != 0
				sp.Has |= HasStream
			}
		case idServerTTFT, idServerTPOT, idIsStreaming, idLLMIsStreaming, idLLMPromptTokens, idLLMOutputTokens,
			idLLMInvocation, idEmbInvocation:
			p = mp.libAttr(&st.lib, id, v)
		case idCacheRead:
			if sp.CacheReadTokens, p = tokens(v); p.kind == nil {
				sp.Has |= HasCacheReadTokens
			}
		case idCacheReadOld:
			if st.cacheRead, p = tokens(v); p.kind == nil {
				st.has |= HasCacheReadTokens
			}
		case idCacheWrite:
			if sp.CacheWriteTokens, p = tokens(v); p.kind == nil {
				sp.Has |= HasCacheWriteTokens
			}
		case idCacheWriteOld:
			if st.cacheWrite, p = tokens(v); p.kind == nil {
				st.has |= HasCacheWriteTokens
			}
		case idReasoning:
			if sp.ReasoningTokens, p = tokens(v); p.kind == nil {
				sp.Has |= HasReasoningTokens
			}
		case idConfidence:
			if sp.Confidence, p = number(v); p.kind == nil {
				sp.Has |= HasConfidence
			}
		case idAlignment:
			if sp.Alignment, p = number(v); p.kind == nil {
				sp.Has |= HasAlignment
			}
		}
		st.bad.note(id, p)
	}
}

// resourceAttr applies one resource attribute whose key matched hit.
func (mp *mapper) resourceAttr(r *resourceVals, hit uint64, v *attrVal) {
	hit &^= r.seen
	if hit == 0 {
		return
	}
	r.seen |= hit
	if v.kind == kindEmpty {
		return
	}
	for hit != 0 {
		id := attrID(bits.TrailingZeros64(hit))
		hit &= hit - 1
		var p problem
		switch id {
		case idServiceName:
			r.service, p = mp.str(id, v)
		case idTenant:
			r.tenant, p = mp.str(id, v)
		case idVariant:
			r.variant, p = mp.str(id, v)
		case idSession:
			r.session, p = mp.str(id, v)
		case idRoute:
			r.route, p = mp.str(id, v)
		case idConfidence:
			if r.confidence, p = number(v); p.kind == nil {
				r.has |= HasConfidence
			}
		case idAlignment:
			if r.alignment, p = number(v); p.kind == nil {
				r.has |= HasAlignment
			}
		}
		r.bad.note(id, p)
	}
}

// finishSpan applies fallbacks and derived fields to the span the decoder
// just read (the last element of mp.dst). It drops the span when it has no
// model. It returns the deferred attribute problem to raise, if any, and
// whether it lies on the resource.
func (mp *mapper) finishSpan(st *spanState, r *resourceVals) (bad *badAttr, onResource bool) {
	sp := &mp.dst[len(mp.dst)-1]
	if sp.Provider == "" {
		sp.Provider = st.system
	}
	genAIModel := sp.Key.Model != "" || sp.ResponseModel != ""
	if st.seen&libIDs != 0 {
		mp.libNames(sp, st)
	}
	if sp.Key.Model == "" {
		sp.Key.Model = sp.ResponseModel
	}
	mp.olderNames(sp, st)
	modelBad := st.bad.set && (st.bad.id == idRequestModel || st.bad.id == idResponseModel ||
		st.bad.id == idLLMModel || st.bad.id == idLLMInvocation || st.bad.id == idEmbModel || st.bad.id == idEmbInvocation)
	if reason := notLLM(sp, st, genAIModel, modelBad); reason != "" {
		mp.stats.SkippedNoModel++
		if mp.scopeLLM || st.seen&llmIDs != 0 || st.lib.llmKey {
			mp.unkeyed(st, reason)
		}
		mp.dst = mp.dst[:len(mp.dst)-1]
		return nil, false
	}
	mp.llm++
	if st.bad.set {
		return &st.bad, false
	}
	if r.bad.set {
		return &r.bad, true
	}
	switch st.lib.dropped {
	case droppedNone:
	case droppedEventBeforeStart:
		mp.stats.Dropped.EventBeforeStart++
	case droppedEventAfterEnd:
		mp.stats.Dropped.EventAfterEnd++
	case droppedServerTTFT:
		mp.stats.Dropped.ServerTTFT++
	}
	sp.Key.Service = r.service
	if sp.Key.Tenant == "" {
		sp.Key.Tenant = r.tenant
	}
	if sp.Key.Variant == "" {
		sp.Key.Variant = r.variant
	}
	if sp.SessionID == "" {
		sp.SessionID = r.session
	}
	if sp.Route == "" {
		sp.Route = r.route
	}
	if sp.Route == "" {
		sp.Route = sp.Operation
	}
	if sp.Has&HasConfidence == 0 && r.has&HasConfidence != 0 {
		sp.Confidence = r.confidence
		sp.Has |= HasConfidence
	}
	if sp.Has&HasAlignment == 0 && r.has&HasAlignment != 0 {
		sp.Alignment = r.alignment
		sp.Has |= HasAlignment
	}
	if sp.ErrorType != "" {
		sp.Error = true
	} else if sp.Error {
		sp.ErrorType = statusErrorType
	}
	sp.Derive()
	if st.ttftOlder && sp.StartUnixNano > 0 && sp.EndUnixNano >= sp.StartUnixNano && sp.DurationMs <= MaxDurationMs {
		// Validate would name gen_ai.response.time_to_first_chunk, which
		// the span does not have: the older name's TTFT out of range
		// rejects the span under its own name (after the checks of the
		// times, which Validate makes first).
		if reason := ttftProblem(sp); reason != "" {
			st.bad = badAttr{set: true, id: idTTFT, problem: problem{ErrInvalid, reason}}
			return &st.bad, false
		}
	}
	if st.lib.has&libServerTPOT != 0 {
		mp.explicitTPOT(sp, st)
	}
	return nil, false
}

// olderNames applies the values of the older attribute names where the
// newer name is absent (whatever the order they came in), and the operation
// of a span named "{operation} {model}" when gen_ai.operation.name is absent.
func (mp *mapper) olderNames(sp *Span, st *spanState) {
	if sp.Has&HasTTFT == 0 && st.has&HasTTFT != 0 {
		sp.TTFTMs = st.ttftMs
		sp.Has |= HasTTFT
		st.ttftOlder = true
	}
	if sp.Has&(HasTTFT|HasStream) != HasTTFT|HasStream && st.lib.has != 0 {
		mp.libTiming(sp, st)
	}
	if sp.Has&HasCacheReadTokens == 0 && st.has&HasCacheReadTokens != 0 {
		sp.CacheReadTokens = st.cacheRead
		sp.Has |= HasCacheReadTokens
	}
	if sp.Has&HasCacheWriteTokens == 0 && st.has&HasCacheWriteTokens != 0 {
		sp.CacheWriteTokens = st.cacheWrite
		sp.Has |= HasCacheWriteTokens
	}
	if sp.Operation == "" && sp.Key.Model != "" {
		sp.Operation = mp.operationFromName(st.name, sp)
	}
}

// operationFromName returns the operation of a span named
// "{gen_ai.operation.name} {model}" (the name of gen_ai.client.inference
// spans), where model is the span's request or response model; "" for any
// other name, so an unrelated span name never becomes an operation.
func (mp *mapper) operationFromName(name []byte, sp *Span) string {
	i := bytes.IndexByte(name, ' ')
	if i <= 0 {
		return ""
	}
	model := name[i+1:]
	if string(model) != sp.Key.Model && string(model) != sp.ResponseModel {
		return ""
	}
	op, p := mp.keep(idOperation, name[:i])
	if p.kind != nil {
		return ""
	}
	return op
}

// statusErrorType is Span.ErrorType for an ERROR status without error.type.
const statusErrorType = "status_error"

// statusCodeError is the OTLP Status.code of a failed span.
const statusCodeError = 2

// rejectSpan rejects span pi of scope si of resource ri, which finishSpan
// found unusable for bad: the error names the span, or its resource when
// the bad attribute is the resource's (onResource). The decoders call it
// only when bad is not nil, so that a good span pays no call.
func (mp *mapper) rejectSpan(bad *badAttr, onResource bool, ri, si, pi int) {
	path := spanPath(ri, si, pi)
	if onResource {
		path = resourcePath(ri)
	}
	mp.reject(mp.attrError(bad, path))
}

// attrError builds the error for a deferred attribute problem.
func (mp *mapper) attrError(bad *badAttr, path string) error {
	return wrap(bad.kind, &FieldError{
		Field:  path + ".attributes[" + mp.m.names[bad.id] + "]",
		Reason: bad.reason,
	})
}

// spanPath names span p of scope s of resource r.
func spanPath(r, s, p int) string {
	return "resource_spans[" + strconv.Itoa(r) + "].scope_spans[" + strconv.Itoa(s) + "].spans[" + strconv.Itoa(p) + "]"
}

// resourcePath names the resource of resource r.
func resourcePath(r int) string {
	return "resource_spans[" + strconv.Itoa(r) + "].resource"
}

// tooLargeLimit builds an ErrTooLarge error naming the limit.
func tooLargeLimit(field, limit string, got, max int, unit string) error {
	return wrap(ErrTooLarge, &FieldError{Field: field,
		Reason: strconv.Itoa(got) + " " + unit + " exceeds " + limit + " = " + strconv.Itoa(max)})
}
