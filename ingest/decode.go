package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SpanDecoder is the built-in decoder of span topics: OTLP TracesData in
// protobuf or JSON, one message holding many spans. Spans without a model
// are skipped and counted in Record.Stats (those that look like LLM calls
// also by scope and reason, which the consumer counts and logs: see
// unkeyed.go); the rest are checked with
// Span.Validate, and invalid ones are reported in a *PartialError (or, when
// every LLM span of the message is invalid, a plain error: the whole record
// is invalid).
//
// With an enabled Evaluations mapping it also reads the message's
// gen_ai.evaluation.result span events and delivers the corrections the
// mapping makes of them in Record.Corrections (see EvaluationDecoder).
type SpanDecoder struct {
	Encoding    Encoding
	Names       schemas.AttributeNames
	Limits      schemas.Limits
	Evaluations *schemas.EvaluationMapping
}

// Decode implements Decoder.
func (d *SpanDecoder) Decode(_ int64, _ []Header, value []byte, out *Record) error {
	enc := d.Encoding
	if enc == EncodingAuto {
		enc = sniff(value)
	}
	var (
		spans []schemas.Span
		st    schemas.DecodeStats
		err   error
	)
	if enc == EncodingJSON {
		spans, st, err = schemas.DecodeOTLPJSON(value, d.Names, d.Limits, nil)
	} else {
		spans, st, err = schemas.DecodeOTLPProto(value, d.Names, d.Limits, nil)
	}
	out.Stats = st
	// A bad attribute (wrong type, invalid UTF-8) rejects its span only:
	// the decoder returns the others, and the rejected ones join the
	// invalid spans below, under the same numbering of LLM spans.
	var rejected []schemas.SpanError
	total := len(spans)
	var se *schemas.SpanErrors
	if errors.As(err, &se) {
		rejected, total, err = se.Spans, se.Total, nil
	}
	if err != nil {
		return err
	}
	var evalErr error
	// The byte search keeps the second walk off messages without the event.
	if d.Evaluations.Enabled() && bytes.Contains(value, evaluationEventName) {
		var evs []schemas.Evaluation
		if enc == EncodingJSON {
			evs, evalErr = schemas.DecodeOTLPJSONSpanEvaluations(value, d.Names, d.Limits, nil)
		} else {
			evs, evalErr = schemas.DecodeOTLPSpanEvaluations(value, d.Names, d.Limits, nil)
		}
		var skipped schemas.EvaluationErrors
		if evalErr == nil || errors.As(evalErr, &skipped) {
			var unjoinable error
			out.Corrections, unjoinable = evaluationCorrections(d.Evaluations, evs, out.Corrections)
			evalErr = errors.Join(evalErr, unjoinable)
		}
	}
	var bad []InvalidSpan
	kept := spans[:0]
	idx, next := 0, 0 // idx: the LLM-span index of spans[i]; next: of rejected
	for i := range spans {
		for next < len(rejected) && rejected[next].Index == idx {
			bad = append(bad, InvalidSpan{Index: idx, Err: rejected[next].Err})
			next, idx = next+1, idx+1
		}
		if verr := spans[i].Validate(); verr != nil {
			bad = append(bad, InvalidSpan{Index: idx, Err: verr})
		} else {
			kept = append(kept, spans[i])
		}
		idx++
	}
	for ; next < len(rejected); next++ {
		bad = append(bad, InvalidSpan{Index: rejected[next].Index, Err: rejected[next].Err})
	}
	out.Spans = kept
	if len(bad) == 0 {
		if evalErr != nil {
			return &PartialError{Total: total, Evaluations: evalErr}
		}
		return nil
	}
	if len(kept) == 0 && len(out.Corrections) == 0 {
		// Nothing valid to deliver: the record is invalid as a whole, and
		// its DLQ headers say so without the partial marker.
		return &allInvalidError{PartialError{Invalid: bad, Total: total}}
	}
	return &PartialError{Invalid: bad, Total: total, Evaluations: evalErr}
}

var evaluationEventName = []byte(schemas.EvaluationEventName)

// evaluationCorrections appends the corrections m makes of evs to dst; an
// event a rule matches but that has nothing to join by is an error naming it.
func evaluationCorrections(m *schemas.EvaluationMapping, evs []schemas.Evaluation, dst []schemas.Correction) ([]schemas.Correction, error) {
	dst, unjoinable := m.Corrections(evs, dst)
	if len(unjoinable) == 0 {
		return dst, nil
	}
	ev := &evs[unjoinable[0]]
	return dst, fmt.Errorf("%w: %d %s event(s) matched a rule but carry no trace id, session or gen_ai.response.id to join by; first: %s at %d",
		schemas.ErrInvalid, len(unjoinable), schemas.EvaluationEventName, ev.Name, ev.TimeUnixNano)
}

// EvaluationDecoder is the built-in decoder of OTLP log topics (the
// Collector's kafka exporter writes logs as LogsData, otlp_proto or
// otlp_json, default topic otlp_logs): it reads the gen_ai.evaluation.result
// events among the log records and delivers the corrections Evaluations
// makes of them in Record.Corrections. Other log records are skipped. A
// message that cannot be decoded sends the record to the DLQ; events with
// an unusable attribute, or that match a rule but cannot be joined, are
// named in a PartialError (the others' corrections are delivered), or send
// the record to the DLQ when no correction is left.
type EvaluationDecoder struct {
	Encoding    Encoding
	Names       schemas.AttributeNames
	Limits      schemas.Limits
	Evaluations *schemas.EvaluationMapping
}

// Decode implements Decoder.
func (d *EvaluationDecoder) Decode(_ int64, _ []Header, value []byte, out *Record) error {
	enc := d.Encoding
	if enc == EncodingAuto {
		enc = sniff(value)
	}
	var (
		evs []schemas.Evaluation
		err error
	)
	if enc == EncodingJSON {
		evs, err = schemas.DecodeOTLPJSONLogEvaluations(value, d.Names, d.Limits, nil)
	} else {
		evs, err = schemas.DecodeOTLPLogEvaluations(value, d.Names, d.Limits, nil)
	}
	var skipped schemas.EvaluationErrors
	if err != nil && !errors.As(err, &skipped) {
		return err
	}
	var unjoinable error
	out.Corrections, unjoinable = evaluationCorrections(d.Evaluations, evs, out.Corrections[:0])
	if err = errors.Join(err, unjoinable); err != nil {
		if len(out.Corrections) == 0 {
			return err
		}
		// The usable events' corrections are delivered; the record is
		// dead-lettered as partial.
		return &PartialError{Evaluations: err}
	}
	return nil
}

// allInvalidError is a PartialError in which no span survived; it is not
// matched by errors.As(err, **PartialError), so the record is not delivered.
type allInvalidError struct{ p PartialError }

func (e *allInvalidError) Error() string   { return "all " + e.p.Error() }
func (e *allInvalidError) Unwrap() []error { return e.p.Unwrap() }

// sniff picks the encoding of a span message from its first non-whitespace
// byte: '{' is JSON, anything else (including an empty message) protobuf.
func sniff(b []byte) Encoding {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return EncodingJSON
		}
		return EncodingProto
	}
	return EncodingProto
}

// CorrectionDecoder is the built-in decoder of correction topics: one JSON
// correction event per message (schemas/correction.v1.schema.json).
type CorrectionDecoder struct{}

// Decode implements Decoder.
func (CorrectionDecoder) Decode(_ int64, _ []Header, value []byte, out *Record) error {
	c, err := schemas.DecodeCorrection(value)
	if err != nil {
		return err
	}
	out.Corrections = []schemas.Correction{c}
	return nil
}

// ErrorKind classifies why a record went to the DLQ; it is the value of the
// fusebox.error.kind header.
type ErrorKind string

const (
	// KindMalformed: the bytes could not be decoded (or the decoder
	// panicked).
	KindMalformed ErrorKind = "malformed"
	// KindInvalid: the record decoded but broke a rule. A partially invalid
	// span record also has this kind, with fusebox.dlq.partial=true.
	KindInvalid ErrorKind = "invalid"
	// KindTooLarge: the record exceeded a Limit.
	KindTooLarge ErrorKind = "too_large"
	// KindFutureEventTime: every event of the record (or, with
	// fusebox.dlq.partial=true, the spans named) ended more than
	// MaxFutureSkew after the record's Kafka timestamp (ErrFutureEventTime).
	KindFutureEventTime ErrorKind = "future_event_time"
)

// classify maps a decode error to its kind. Malformed wins over invalid: a
// message that is both broken and wrong is first of all broken; invalid
// wins over future_event_time, so a partial record with both names each
// span in its headers under kind invalid.
func classify(err error) ErrorKind {
	switch {
	case errors.Is(err, schemas.ErrTooLarge):
		return KindTooLarge
	case errors.Is(err, schemas.ErrMalformed):
		return KindMalformed
	case errors.Is(err, schemas.ErrInvalid):
		return KindInvalid
	case errors.Is(err, ErrFutureEventTime):
		return KindFutureEventTime
	}
	return KindMalformed
}

// errorField returns the field named by the first *schemas.FieldError in err.
func errorField(err error) string {
	var fe *schemas.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// PanicError is what a decoder panic becomes: a malformed record.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("decoder panic: %v", e.Value) }

// Unwrap makes a panic count as malformed.
func (e *PanicError) Unwrap() error { return schemas.ErrMalformed }

// tooLargeValue is the error of a record value past Limits.MaxMessageBytes.
type tooLargeValue struct{ got, limit int }

func (e *tooLargeValue) Error() string {
	return schemas.ErrTooLarge.Error() + ": value: " + strconv.Itoa(e.got) + " bytes exceeds max_message_bytes " + strconv.Itoa(e.limit)
}

func (e *tooLargeValue) Unwrap() []error {
	return []error{schemas.ErrTooLarge, &schemas.FieldError{Field: "value", Reason: "exceeds max_message_bytes"}}
}

// decodeSafe runs d on r with the size check first and panics recovered;
// headers is the partition's scratch for r's headers (returned for reuse).
func decodeSafe(d Decoder, r *kgo.Record, headers []Header, out *Record, maxBytes int) (_ []Header, err error) {
	if len(r.Value) > maxBytes {
		return headers, &tooLargeValue{got: len(r.Value), limit: maxBytes}
	}
	headers = Headers(headers, r.Headers)
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return headers, d.Decode(r.Offset, headers, r.Value, out)
}
