package schemas

// CorrectionKind is what the user did to the answer.
type CorrectionKind string

// The correction kinds of schema version 1 (schemas/correction.v1.schema.json).
const (
	KindReject      CorrectionKind = "reject"       // the user rejected the answer
	KindRephrase    CorrectionKind = "rephrase"     // asked again in other words
	KindSlotReplace CorrectionKind = "slot_replace" // replaced a value the model filled in
	KindThumbsDown  CorrectionKind = "thumbs_down"  // explicit negative feedback
	KindEdit        CorrectionKind = "edit"         // edited the answer before using it
	KindRegenerate  CorrectionKind = "regenerate"   // asked for another answer
	KindEscalate    CorrectionKind = "escalate"     // handed over to a human
)

// CorrectionKinds lists every kind schema version 1 accepts.
var CorrectionKinds = []CorrectionKind{
	KindReject, KindRephrase, KindSlotReplace, KindThumbsDown, KindEdit, KindRegenerate, KindEscalate,
}

// Valid reports whether k is a kind of schema version 1.
func (k CorrectionKind) Valid() bool {
	for _, v := range CorrectionKinds {
		if k == v {
			return true
		}
	}
	return false
}

// CorrectionSchemaVersion is the schema_version this build writes and the
// highest it reads.
const CorrectionSchemaVersion = 1

// Correction is a user-correction event: evidence that an answer was wrong.
// It is joined to the span it corrects by TraceID, else by SessionID, within
// the corrections processor's join window.
type Correction struct {
	SchemaVersion int
	EventID       string
	// TimeUnixNano is the event time of the correction.
	TimeUnixNano int64
	Tenant       string
	// TraceID is the zero value when the event has none; then SessionID is set.
	TraceID   TraceID
	SessionID string
	// Model and Variant are optional; they attribute a correction that joins
	// no span.
	Model   string
	Variant string
	// ResponseID is the gen_ai.response.id of the evaluated answer, set on
	// corrections made of evaluation events; it joins when the trace id is
	// absent (before the session). Not part of the JSON schema.
	ResponseID string
	Kind       CorrectionKind
	// Context holds optional string properties (screen, locale, ...),
	// kept in key order.
	Context []KV
}

// KV is one string property.
type KV struct {
	Key, Value string
}
