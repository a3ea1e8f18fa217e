package schemas

import (
	"errors"
	"math"
	"strconv"
)

// EvaluationEventName is the name of the GenAI conventions' evaluation event:
// a span event on the span it evaluates, or a log record (event_name, or
// the older event.name attribute) carrying that span's trace and span ids.
const EvaluationEventName = "gen_ai.evaluation.result"

// Evaluation is one gen_ai.evaluation.result event, as read from a span
// event or an OTLP log record.
type Evaluation struct {
	// TraceID and SpanID are the evaluated span's (the parent span of a span
	// event; the log record's trace_id and span_id). Either may be zero.
	TraceID TraceID
	SpanID  SpanID
	// TimeUnixNano is the event's time; for a log record without one its
	// observed time; for a span event without one the span's end.
	TimeUnixNano int64

	Name        string  // gen_ai.evaluation.name
	Label       string  // gen_ai.evaluation.score.label
	Score       float64 // gen_ai.evaluation.score.value; valid when HasScore
	HasScore    bool
	Explanation string // gen_ai.evaluation.explanation
	ResponseID  string // gen_ai.response.id

	// Tenant, SessionID and Variant are the configurable attributes
	// (AttributeNames) and Model gen_ai.request.model (else
	// gen_ai.response.model), looked up on the event, then (span events) its
	// span, then the resource.
	Tenant, SessionID, Model, Variant string
}

// EvaluationErrors is returned by the evaluation readers when some events
// had an unusable attribute of their own (a score written as a string, a
// name that is not UTF-8): those events are skipped, each error names one,
// and every other event is returned. Damage to the message's structure is
// not an EvaluationErrors: it fails the whole message.
type EvaluationErrors []error

func (e EvaluationErrors) Error() string {
	if len(e) == 1 {
		return "1 evaluation event unusable: " + e[0].Error()
	}
	return strconv.Itoa(len(e)) + " evaluation events unusable; first: " + e[0].Error()
}

// Unwrap returns the events' errors, so that errors.Is(err, ErrInvalid) holds.
func (e EvaluationErrors) Unwrap() []error { return e }

// EvaluationRule turns the evaluation events of one evaluation name into
// corrections: an event matches when its gen_ai.evaluation.name is Name and
// its label is one of Labels, or its score is at most ScoreAtMost.
type EvaluationRule struct {
	// Name is the gen_ai.evaluation.name the rule applies to. Required.
	Name string `yaml:"name"`
	// Labels are the gen_ai.evaluation.score.label values that make a
	// correction (compared exactly).
	Labels []string `yaml:"labels"`
	// ScoreAtMost, when set, makes a correction of every event whose
	// gen_ai.evaluation.score.value is <= it (a NaN score never matches).
	ScoreAtMost *float64 `yaml:"score_at_most"`
	// Kind is the correction kind made. Default thumbs_down.
	Kind CorrectionKind `yaml:"kind"`
}

// EvaluationMapping is the list of rules; the first rule that matches an
// event decides. An empty mapping makes no corrections (and turns the
// reading of evaluation events off).
type EvaluationMapping struct {
	Rules []EvaluationRule `yaml:"rules"`
}

// Validate names the first problem of each rule: a missing name, a rule
// that can match nothing (no labels and no score threshold), a NaN or
// infinite threshold, an unknown kind.
func (m EvaluationMapping) Validate() error {
	var errs []error
	for i, r := range m.Rules {
		field := "evaluations.rules[" + strconv.Itoa(i) + "]"
		switch {
		case r.Name == "":
			errs = append(errs, &FieldError{Field: field + ".name", Reason: "must not be empty"})
		case len(r.Labels) == 0 && r.ScoreAtMost == nil:
			errs = append(errs, &FieldError{Field: field, Reason: "needs labels or score_at_most: it would match nothing"})
		case r.ScoreAtMost != nil && (math.IsNaN(*r.ScoreAtMost) || math.IsInf(*r.ScoreAtMost, 0)):
			errs = append(errs, &FieldError{Field: field + ".score_at_most", Reason: "must be a finite number"})
		case r.Kind != "" && !r.Kind.Valid():
			errs = append(errs, &FieldError{Field: field + ".kind", Reason: "unknown correction kind " + strconv.Quote(string(r.Kind))})
		}
	}
	return errors.Join(errs...)
}

// Enabled reports whether the mapping has any rule.
func (m *EvaluationMapping) Enabled() bool { return m != nil && len(m.Rules) > 0 }

// Match returns the kind of the correction ev makes, and false when no rule
// matches it.
func (m *EvaluationMapping) Match(ev *Evaluation) (CorrectionKind, bool) {
	if m == nil {
		return "", false
	}
	for i := range m.Rules {
		r := &m.Rules[i]
		if r.Name != ev.Name {
			continue
		}
		hit := ev.Label != "" && contains(r.Labels, ev.Label)
		if !hit && r.ScoreAtMost != nil && ev.HasScore && ev.Score <= *r.ScoreAtMost {
			hit = true
		}
		if !hit {
			continue
		}
		if r.Kind == "" {
			return KindThumbsDown, true
		}
		return r.Kind, true
	}
	return "", false
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// Corrections appends to dst a correction for every event of evs that a
// rule matches, and returns the extended slice. The correction's event id
// is derived from the event (so a replayed message gives the same ids):
// "gen_ai.evaluation:" + trace id + ":" + span id + ":" + name + ":" + time.
// It joins by the evaluated span's trace id, else by gen_ai.response.id,
// else by the session attribute;
// its context holds the evaluation's name, label, score and response id. An
// event without a trace id, a session and a response id cannot be joined:
// it is returned in unjoinable (not silently dropped).
func (m *EvaluationMapping) Corrections(evs []Evaluation, dst []Correction) (out []Correction, unjoinable []int) {
	for i := range evs {
		ev := &evs[i]
		kind, ok := m.Match(ev)
		if !ok {
			continue
		}
		if ev.TraceID.IsZero() && ev.SessionID == "" && ev.ResponseID == "" {
			unjoinable = append(unjoinable, i)
			continue
		}
		c := Correction{
			SchemaVersion: CorrectionSchemaVersion,
			EventID: "gen_ai.evaluation:" + ev.TraceID.String() + ":" + ev.SpanID.String() + ":" + ev.Name + ":" +
				strconv.FormatInt(ev.TimeUnixNano, 10),
			TimeUnixNano: ev.TimeUnixNano,
			Tenant:       ev.Tenant,
			TraceID:      ev.TraceID,
			SessionID:    ev.SessionID,
			Model:        ev.Model,
			Variant:      ev.Variant,
			ResponseID:   ev.ResponseID,
			Kind:         kind,
		}
		c.Context = append(c.Context, KV{Key: "gen_ai.evaluation.name", Value: ev.Name})
		if ev.Label != "" {
			c.Context = append(c.Context, KV{Key: "gen_ai.evaluation.score.label", Value: ev.Label})
		}
		if ev.HasScore {
			c.Context = append(c.Context, KV{Key: "gen_ai.evaluation.score.value", Value: strconv.FormatFloat(ev.Score, 'g', -1, 64)})
		}
		if ev.ResponseID != "" {
			c.Context = append(c.Context, KV{Key: "gen_ai.response.id", Value: ev.ResponseID})
		}
		sortKV(c.Context)
		dst = append(dst, c)
	}
	return dst, unjoinable
}

// sortKV sorts a few properties by key (insertion sort: at most four).
func sortKV(kv []KV) {
	for i := 1; i < len(kv); i++ {
		for j := i; j > 0 && kv[j].Key < kv[j-1].Key; j-- {
			kv[j], kv[j-1] = kv[j-1], kv[j]
		}
	}
}
