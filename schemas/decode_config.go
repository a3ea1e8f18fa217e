package schemas

import "errors"

// AttributeNames says which span attributes carry the values that OpenTelemetry's
// GenAI conventions do not define. Attributes are looked up on the span first,
// then on its resource.
type AttributeNames struct {
	Tenant     string `yaml:"tenant"`     // default "tenant.id"
	Variant    string `yaml:"variant"`    // default "deployment.variant"
	Confidence string `yaml:"confidence"` // default "llm.response.confidence"
	Alignment  string `yaml:"alignment"`  // default "llm.alignment.score"
	Session    string `yaml:"session"`    // default "session.id"
	Route      string `yaml:"route"`      // default "http.route"; falls back to gen_ai.operation.name
}

// DefaultAttributeNames returns the defaults listed on AttributeNames.
func DefaultAttributeNames() AttributeNames {
	return AttributeNames{
		Tenant:     "tenant.id",
		Variant:    "deployment.variant",
		Confidence: "llm.response.confidence",
		Alignment:  "llm.alignment.score",
		Session:    "session.id",
		Route:      "http.route",
	}
}

// Validate reports an empty name.
func (a AttributeNames) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"tenant", a.Tenant}, {"variant", a.Variant}, {"confidence", a.Confidence},
		{"alignment", a.Alignment}, {"session", a.Session}, {"route", a.Route},
	} {
		if f.v == "" {
			errs = append(errs, &FieldError{Field: "attributes." + f.name, Reason: "must not be empty"})
		}
	}
	return errors.Join(errs...)
}

// Limits bound what one Kafka message may make fusebox hold in memory. A
// message past a limit is rejected whole (to the dead-letter topic) with an
// error wrapping ErrTooLarge that names the limit; it is never truncated.
type Limits struct {
	MaxMessageBytes      int `yaml:"max_message_bytes"`       // default 16 MiB
	MaxSpansPerMessage   int `yaml:"max_spans_per_message"`   // default 100,000
	MaxAttributesPerSpan int `yaml:"max_attributes_per_span"` // default 1,000
	MaxStringBytes       int `yaml:"max_string_bytes"`        // default 64 KiB, any single string value or key
}

// DefaultLimits returns the defaults listed on Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxMessageBytes:      16 << 20,
		MaxSpansPerMessage:   100_000,
		MaxAttributesPerSpan: 1_000,
		MaxStringBytes:       64 << 10,
	}
}

// Validate reports a limit that is not positive.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{
		{"max_message_bytes", l.MaxMessageBytes}, {"max_spans_per_message", l.MaxSpansPerMessage},
		{"max_attributes_per_span", l.MaxAttributesPerSpan}, {"max_string_bytes", l.MaxStringBytes},
	} {
		if f.v <= 0 {
			errs = append(errs, &FieldError{Field: "limits." + f.name, Reason: "must be positive"})
		}
	}
	return errors.Join(errs...)
}

// DecodeStats counts what a decode call saw besides the spans it returned.
type DecodeStats struct {
	// SpansSeen is every span in the message, LLM call or not.
	SpansSeen int
	// SkippedNoModel counts every span not returned as an LLM call: without
	// a model in any form read (see otlp.go), or an OpenInference span of
	// another kind than LLM and EMBEDDING. Skipped by design.
	SkippedNoModel int
	// Unkeyed counts, by instrumentation scope and reason, the skipped spans
	// (among SkippedNoModel) that look like LLM calls: their scope name is a
	// GenAI instrumentation's (LooksLikeLLMScope) or they have a gen_ai.* or
	// llm.* attribute. At most MaxUnkeyedScopes scopes are named; later ones
	// count under UnkeyedOtherScope. Nil when there are none.
	Unkeyed []UnkeyedSpans
	// InvalidScopeNames counts the scope names (one per ScopeSpans) that
	// were not valid UTF-8: their spans are read with no scope (Scope "").
	// (In OTLP/JSON the whole text must be UTF-8.)
	InvalidScopeNames int
	// Dropped counts the LLM spans returned without a timing an
	// instrumentation library's own form gave them, out of range: the
	// span is kept (its duration, error and tokens count), the timing is
	// not.
	Dropped DroppedTimings
}

// DroppedTimings counts, by reason, the library-form timings left out of
// the spans returned (see DecodeStats.Dropped). A TTFT of such a form is
// taken only when 0 <= TTFT <= the span's duration; the GenAI attributes
// (gen_ai.response.time_to_first_chunk, gen_ai.response.time_to_first_token)
// are not forgiven: out of range they make the span invalid.
type DroppedTimings struct {
	// EventBeforeStart and EventAfterEnd count TTFTs of a first-token
	// event (gen_ai.content.completion.chunk, First Token Stream Event)
	// time-stamped before the span's start or after its end.
	EventBeforeStart, EventAfterEnd int
	// ServerTTFT counts openlit's gen_ai.server.time_to_first_token
	// negative, not finite, or longer than the span.
	ServerTTFT int
	// ServerTPOT counts gen_ai.server.time_per_output_token negative or
	// not finite: the TPOT derived from TTFT and tokens, if any, stays.
	ServerTPOT int
}

// Total is the sum of the counts.
func (d DroppedTimings) Total() int {
	return d.EventBeforeStart + d.EventAfterEnd + d.ServerTTFT + d.ServerTPOT
}
