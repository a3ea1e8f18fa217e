package schemas

import (
	"encoding/hex"
	"math"
	"strconv"
)

// TraceID is a W3C/OTLP trace id. The zero value means "absent".
type TraceID [16]byte

// SpanID is an OTLP span id. The zero value means "absent".
type SpanID [8]byte

// IsZero reports whether the id is absent.
func (t TraceID) IsZero() bool { return t == TraceID{} }

// String is the 32-character lowercase hex form used by OTLP JSON and by the
// Collector as a Kafka message key.
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// IsZero reports whether the id is absent.
func (s SpanID) IsZero() bool { return s == SpanID{} }

// String is the 16-character lowercase hex form.
func (s SpanID) String() string { return hex.EncodeToString(s[:]) }

// ParseTraceID parses 32 hex characters.
func ParseTraceID(s string) (TraceID, error) {
	var t TraceID
	if len(s) != 32 {
		return t, &FieldError{Field: "trace_id", Reason: "want 32 hex characters, got " + strconv.Itoa(len(s))}
	}
	if _, err := hex.Decode(t[:], []byte(s)); err != nil {
		return t, &FieldError{Field: "trace_id", Reason: "not hex: " + err.Error()}
	}
	return t, nil
}

// Fields is a bit set saying which optional Span fields were present in the
// input. An absent field is never stood in for by NaN or zero.
type Fields uint16

const (
	HasTTFT             Fields = 1 << iota // TTFTMs is set
	HasTPOT                                // TPOTMs is set
	HasInputTokens                         // InputTokens is set
	HasOutputTokens                        // OutputTokens is set
	HasConfidence                          // Confidence is set
	HasAlignment                           // Alignment is set
	HasCacheReadTokens                     // CacheReadTokens is set
	HasCacheWriteTokens                    // CacheWriteTokens is set
	HasReasoningTokens                     // ReasoningTokens is set
	HasStream                              // Stream is set (gen_ai.request.stream or another form, see otlp.go)
)

// Span is one LLM call, decoded from an OTLP span that carries a model.
//
// Times are Unix nanoseconds of event time; durations are milliseconds.
// The span's end time is its event time: it decides the window it counts in.
type Span struct {
	TraceID TraceID
	SpanID  SpanID

	StartUnixNano int64
	EndUnixNano   int64

	// DurationMs is (end - start) in milliseconds.
	DurationMs float64
	// TTFTMs is the time to first token (gen_ai.response.time_to_first_chunk,
	// else gen_ai.response.time_to_first_token, else openlit's
	// gen_ai.server.time_to_first_token, all given in seconds; else from a
	// first-token span event, see otlp.go), in ms. Valid when Has&HasTTFT.
	TTFTMs float64
	// TPOTMs is the time per output token after the first:
	// (DurationMs - TTFTMs) / (OutputTokens - 1), in ms/token, or openlit's
	// gen_ai.server.time_per_output_token where the decoders read it. Valid
	// when Has&HasTPOT (needs TTFT and at least 2 output tokens); see Derive.
	TPOTMs float64

	InputTokens  int64 // gen_ai.usage.input_tokens
	OutputTokens int64 // gen_ai.usage.output_tokens
	// CacheReadTokens is gen_ai.usage.cache_read.input_tokens (else the
	// older gen_ai.usage.cache_read_input_tokens): input tokens served from
	// the provider's prompt cache. Valid when Has&HasCacheReadTokens.
	CacheReadTokens int64
	// CacheWriteTokens is gen_ai.usage.cache_creation.input_tokens (else the
	// older gen_ai.usage.cache_creation_input_tokens): input tokens written
	// to the provider's prompt cache. Valid when Has&HasCacheWriteTokens.
	CacheWriteTokens int64
	// ReasoningTokens is gen_ai.usage.reasoning.output_tokens: output tokens
	// spent on reasoning. Valid when Has&HasReasoningTokens.
	ReasoningTokens int64
	// Stream is gen_ai.request.stream (else another library's form, see
	// otlp.go): the response was requested as a stream. Valid when
	// Has&HasStream.
	Stream bool

	// FinishReason is the first of gen_ai.response.finish_reasons, "" if none.
	FinishReason string
	// Error is true when the span status is ERROR or error.type is set.
	Error bool
	// ErrorType is error.type, or "status_error" for an ERROR status without it.
	ErrorType string

	// Key is tenant (configurable attribute), service.name (resource),
	// model (gen_ai.request.model, else gen_ai.response.model) and variant
	// (configurable attribute).
	Key Key
	// Operation is gen_ai.operation.name (chat, text_completion, embeddings...).
	Operation string
	// Provider is gen_ai.provider.name, else the older gen_ai.system.
	Provider string
	// ResponseModel is gen_ai.response.model.
	ResponseModel string
	// Route is the configurable route attribute, else Operation.
	Route string
	// SessionID is the configurable session attribute (default session.id).
	SessionID string
	// ResponseID is gen_ai.response.id: what an evaluation event names
	// when it cannot name the span.
	ResponseID string
	// Scope is the name of the instrumentation scope of the span's
	// ScopeSpans (the library that wrote it, e.g.
	// "opentelemetry.instrumentation.openai_v2"), "" when it has none (or
	// a name that is not valid UTF-8); at most MaxScopeBytes, a longer
	// name cut at a character boundary.
	Scope string

	// Confidence is the model's confidence score in [0, 1]. Valid when
	// Has&HasConfidence.
	Confidence float64
	// Alignment is the alignment score in [0, 1]. Valid when Has&HasAlignment.
	Alignment float64

	Has Fields
}

// MaxTokens is the largest token count a span may report; more is absurd for
// any model served today and means a unit or overflow bug upstream.
const MaxTokens = 10_000_000

// MaxDurationMs is the longest LLM call accepted: 24 hours.
const MaxDurationMs = 24 * 3600 * 1000

// Validate checks the rules every span must keep before it enters the
// statistics. It returns an error wrapping ErrInvalid and a *FieldError
// naming the first broken rule.
func (s *Span) Validate() error {
	switch {
	case s.Key.Model == "":
		return invalid("gen_ai.request.model", "missing: a span without a model is not an LLM call")
	case s.StartUnixNano <= 0:
		return invalid("start_time_unix_nano", "missing or not positive")
	case s.EndUnixNano <= 0:
		return invalid("end_time_unix_nano", "missing or not positive")
	case s.EndUnixNano < s.StartUnixNano:
		return invalid("end_time_unix_nano", "end is before start")
	case !finiteNonNeg(s.DurationMs):
		return invalid("duration", "negative, NaN or infinite")
	case s.DurationMs > MaxDurationMs:
		return invalid("duration", "longer than 24h")
	}
	if reason := ttftProblem(s); reason != "" {
		// The decoders take a library form's TTFT only within the call and
		// reject gen_ai.response.time_to_first_token's under its own name:
		// a decoded span's TTFT that fails here is this attribute's.
		return invalid("gen_ai.response.time_to_first_chunk", reason)
	}
	if s.Has&HasTPOT != 0 && !finiteNonNeg(s.TPOTMs) {
		return invalid("time_per_output_token", "negative, NaN or infinite")
	}
	if s.Has&HasInputTokens != 0 && (s.InputTokens < 0 || s.InputTokens > MaxTokens) {
		return invalid("gen_ai.usage.input_tokens", "absurd token count "+strconv.FormatInt(s.InputTokens, 10))
	}
	if s.Has&HasOutputTokens != 0 && (s.OutputTokens < 0 || s.OutputTokens > MaxTokens) {
		return invalid("gen_ai.usage.output_tokens", "absurd token count "+strconv.FormatInt(s.OutputTokens, 10))
	}
	for _, t := range [...]struct {
		has   Fields
		v     int64
		field string
	}{
		{HasCacheReadTokens, s.CacheReadTokens, "gen_ai.usage.cache_read.input_tokens"},
		{HasCacheWriteTokens, s.CacheWriteTokens, "gen_ai.usage.cache_creation.input_tokens"},
		{HasReasoningTokens, s.ReasoningTokens, "gen_ai.usage.reasoning.output_tokens"},
	} {
		if s.Has&t.has != 0 && (t.v < 0 || t.v > MaxTokens) {
			return invalid(t.field, "absurd token count "+strconv.FormatInt(t.v, 10))
		}
	}
	if s.Has&HasConfidence != 0 && !unit(s.Confidence) {
		return invalid("confidence", "not in [0, 1]")
	}
	if s.Has&HasAlignment != 0 && !unit(s.Alignment) {
		return invalid("alignment", "not in [0, 1]")
	}
	return nil
}

// Derive fills DurationMs and TPOTMs from the other fields, as decoders do
// after reading a span, and as everything that builds a Span by hand must,
// so that every path computes the same time per output token:
//
//	DurationMs = (EndUnixNano - StartUnixNano) / 1e6
//	TPOTMs     = (DurationMs - TTFTMs) / (OutputTokens - 1)   [ms/token]
//
// the time after the first token spread over the tokens after the first.
// TPOT is left out (HasTPOT cleared, TPOTMs 0 and meaningless) unless TTFT
// and output tokens are both present, OutputTokens >= 2 (one token has no
// time after it), and the call was not a non-streamed one (Stream present
// and false: its first chunk is the whole answer, so TTFT is the decode
// time and the per-token time is not observed). A TTFT longer than the call
// gives a negative TPOT, which Validate rejects (on the TTFT).
func (s *Span) Derive() {
	s.DurationMs = float64(s.EndUnixNano-s.StartUnixNano) / 1e6
	s.Has &^= HasTPOT
	s.TPOTMs = 0
	if s.Has&HasStream != 0 && !s.Stream {
		return
	}
	if s.Has&HasTTFT != 0 && s.Has&HasOutputTokens != 0 && s.OutputTokens >= 2 {
		s.TPOTMs = (s.DurationMs - s.TTFTMs) / float64(s.OutputTokens-1)
		s.Has |= HasTPOT
	}
}

// ttftProblem is what is wrong with s's TTFT, "" when nothing (or none).
func ttftProblem(s *Span) string {
	switch {
	case s.Has&HasTTFT == 0:
		return ""
	case !finiteNonNeg(s.TTFTMs):
		return "negative, NaN or infinite"
	case s.TTFTMs > s.DurationMs:
		return "longer than the whole call"
	}
	return ""
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

func unit(v float64) bool { return v >= 0 && v <= 1 }
