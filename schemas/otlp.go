package schemas

// OTLP decoding: what is read, and how.
//
// DecodeOTLPProto and DecodeOTLPJSON turn one Kafka message holding an OTLP
// TracesData (wire-identical to ExportTraceServiceRequest) into Spans. They
// share the mapping rules below, so the same traces give the same spans in
// either encoding.
//
// Mapped attributes (span attributes unless said otherwise; "a, else b":
// the first present wins, whatever the attribute order):
//
//	gen_ai.operation.name               Operation (and Route when no route attribute); else from
//	                                    openinference.span.kind (LLM: chat, EMBEDDING: embeddings);
//	                                    else the span name "{operation} {model}"
//	gen_ai.provider.name                Provider; else gen_ai.system, llm.provider, llm.system
//	gen_ai.request.model                Key.Model; else the "model" of llm.invocation_parameters (or
//	                                    embedding.invocation_parameters), gen_ai.response.model,
//	                                    llm.model_name, embedding.model_name
//	gen_ai.response.model               ResponseModel; else llm.model_name, embedding.model_name
//	gen_ai.usage.input_tokens           InputTokens (HasInputTokens); else llm.token_count.prompt
//	gen_ai.usage.output_tokens          OutputTokens (HasOutputTokens); else llm.token_count.completion
//	gen_ai.response.finish_reasons      FinishReason: the first element; else llm.finish_reason
//	gen_ai.response.time_to_first_chunk TTFTMs = seconds * 1000 (HasTTFT); else
//	                                    gen_ai.response.time_to_first_token, gen_ai.server.time_to_first_token
//	                                    (openlit; all seconds), the earliest gen_ai.content.completion.chunk
//	                                    event (OpenLLMetry), the earliest First Token Stream Event
//	                                    (OpenInference): event time - start, in ms; a library form's (openlit's,
//	                                    an event's) only within [0, duration], else none (DecodeStats.Dropped)
//	gen_ai.server.time_per_output_token TPOTMs = seconds * 1000 (openlit) in place of the derived TPOT,
//	                                    unless 0, negative (DecodeStats.Dropped) or the call was not
//	                                    streamed (see Span.Derive)
//	gen_ai.request.stream               Stream (HasStream); else gen_ai.is_streaming, llm.is_streaming,
//	                                    the invocation parameters' "stream", true when TTFT came from an event
//	error.type                          ErrorType, Error = true
//	status.code == ERROR (2)            Error = true, ErrorType "status_error" unless error.type
//	service.name (resource only)        Key.Service
//	scope.name (of the ScopeSpans)      Scope
//	AttributeNames.Tenant/Variant/Session/Route (string), Confidence/Alignment (number):
//	                                    the span's attribute, else the resource's
//
// OpenInference spans whose openinference.span.kind is neither LLM nor
// EMBEDDING are not LLM calls (unless they carry a gen_ai model). Content is
// never read: llm.input_messages.*, llm.output_messages.*, input.value,
// output.value, gen_ai.input.messages, gen_ai.output.messages and event
// attributes are skipped unread, whatever their type. The invocation
// parameters are a JSON object; only "model" (a string) and "stream" (a bool)
// are read.
//
// Types accepted, by field (anything else makes the attribute unusable, see below):
//   - string fields: a string, or an int rendered in decimal (numeric tenant ids are common);
//   - token counts: an int, or a double holding a whole number (some SDKs write every
//     number as a double); a string is not accepted;
//   - time to first chunk, confidence, alignment: a double or an int;
//   - finish reasons: an array whose first element is a string (an empty array means
//     none), or a single string.
//
// An attribute whose value is empty (no oneof field set) counts as absent. An empty string
// counts as absent for every fallback (an empty span tenant falls back to the resource's,
// an empty route to the operation). When a key appears more than once in one attribute
// list the first occurrence wins, as pcommon.Map.Get does.
//
// Only spans with a model (in any form above, non-empty) are returned; the others are
// counted in DecodeStats.SkippedNoModel and their attributes are not judged: a non-LLM span
// with a strange attribute never costs the batch. Those that look like LLM calls (see
// LooksLikeLLMScope and DecodeStats.Unkeyed) are also counted by scope and reason. A mapped attribute whose
// type cannot be used, or whose kept string is not valid UTF-8, fails the whole message
// (ErrInvalid, or ErrMalformed for bad UTF-8, with a FieldError naming the attribute) when
// it belongs to an LLM span or to the resource of one.
//
// Strictness: every structure the decoder walks (messages down to the attribute values it
// maps, status, ids) is checked: truncation, lengths past the end, wrong wire types of
// known fields, bad tags, trace ids not 16 bytes (or empty), span ids not 8 bytes (or
// empty), and of span events their time and name. Unknown fields are skipped by their wire
// type. Parts it does not read (the scope's version and attributes, event attributes,
// links, values of unmapped attributes) are skipped by their length and not parsed, so
// damage inside them goes unnoticed; max_message_bytes still bounds them. In
// protobuf, UTF-8 is checked on the strings fusebox keeps (a prompt cut mid-character in
// some unmapped attribute does not cost the batch); OTLP/JSON text must be UTF-8 throughout.
// Spans in the pre-0.15 field instrumentation_library_spans (ResourceSpans field 1000,
// JSON "instrumentationLibrarySpans") are read when a resource has no scope_spans, as
// pdata's JSON reader does.
//
// Limits (a zero or negative field of Limits means its default): max_message_bytes on the
// message, max_spans_per_message on all spans (LLM or not), max_attributes_per_span on the
// attribute list of each span and each resource, max_string_bytes on every attribute key,
// every top-level string or bytes attribute value, span names and status messages.
// Exceeding one fails the message with an error wrapping ErrTooLarge that names the limit.
//
// On error the returned slice is dst unchanged (no partial batch) and the stats count what
// was seen before the error — except for a *SpanErrors: a bad attribute (a wrong type,
// invalid UTF-8) rejects only its span (or, on a resource, the spans of that resource);
// the other spans are returned with it.

// DecodeOTLPProto decodes one Kafka message holding an OTLP TracesData (wire
// identical to ExportTraceServiceRequest) in protobuf, appending to dst every
// span that carries a model and returning the extended slice. Spans are not
// validated here: call Span.Validate on each. Empty names in names take their
// defaults, as do non-positive limits. See the comment at the top of otlp.go
// for the mapping, the accepted types and the errors.
func DecodeOTLPProto(msg []byte, names AttributeNames, lim Limits, dst []Span) ([]Span, DecodeStats, error) {
	lim = lim.withDefaults()
	if len(msg) > lim.MaxMessageBytes {
		return dst, DecodeStats{}, tooLargeLimit("message", "max_message_bytes", len(msg), lim.MaxMessageBytes, "bytes")
	}
	d := protoDecoder{}
	d.init(names, lim, dst)
	if err := d.traces(msg); err != nil {
		return dst, d.stats, err
	}
	return d.dst, d.stats, d.spanErrors()
}

// DecodeOTLPJSON is DecodeOTLPProto for the OTLP/JSON encoding: the protobuf JSON
// mapping as OTLP specifies it (lowerCamelCase keys; the original snake_case keys are
// accepted too, as pdata does), trace and span ids as hex strings, 64-bit integers as
// strings or numbers, enums as integers (or their names), doubles as numbers or the
// strings "NaN", "Infinity", "-Infinity". Unknown keys are skipped; null stands for
// an absent value. The whole text must be UTF-8.
func DecodeOTLPJSON(msg []byte, names AttributeNames, lim Limits, dst []Span) ([]Span, DecodeStats, error) {
	lim = lim.withDefaults()
	if len(msg) > lim.MaxMessageBytes {
		return dst, DecodeStats{}, tooLargeLimit("message", "max_message_bytes", len(msg), lim.MaxMessageBytes, "bytes")
	}
	d := jsonDecoder{}
	d.init(names, lim, dst, msg)
	if err := d.traces(); err != nil {
		return dst, d.stats, err
	}
	return d.dst, d.stats, d.spanErrors()
}

// withDefaults replaces every non-positive limit by its default.
func (l Limits) withDefaults() Limits {
	def := DefaultLimits()
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = def.MaxMessageBytes
	}
	if l.MaxSpansPerMessage <= 0 {
		l.MaxSpansPerMessage = def.MaxSpansPerMessage
	}
	if l.MaxAttributesPerSpan <= 0 {
		l.MaxAttributesPerSpan = def.MaxAttributesPerSpan
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = def.MaxStringBytes
	}
	return l
}

// withDefaults replaces every empty name by its default.
func (a AttributeNames) withDefaults() AttributeNames {
	def := DefaultAttributeNames()
	if a.Tenant == "" {
		a.Tenant = def.Tenant
	}
	if a.Variant == "" {
		a.Variant = def.Variant
	}
	if a.Confidence == "" {
		a.Confidence = def.Confidence
	}
	if a.Alignment == "" {
		a.Alignment = def.Alignment
	}
	if a.Session == "" {
		a.Session = def.Session
	}
	if a.Route == "" {
		a.Route = def.Route
	}
	return a
}
