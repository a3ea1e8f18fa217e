package batch

import (
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Record is one Kafka record, decoded once. Which fields are filled depends
// on the topic's decoder: the span decoder fills Spans and Stats, the
// correction decoder Corrections, a custom Decoder whatever it likes
// (Payload is for its own type).
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Timestamp time.Time

	// Spans are the message's LLM spans that passed Span.Validate, in
	// message order. Empty when the message held no LLM span: such a record
	// still flows, so that its offset is acknowledged like any other.
	Spans []schemas.Span
	// Corrections holds the one correction event of a correction record.
	Corrections []schemas.Correction
	// Stats counts every span the message held, LLM call or not.
	Stats schemas.DecodeStats
	// Payload is free for a custom Decoder.
	Payload any
}

// Header is one Kafka record header. It is schemas.Header, so that the
// keyed stage's decoder (engine.KeyedDecoder) reads the headers the
// consumer hands it without a copy.
type Header = schemas.Header

// Decoder turns a Kafka record — its offset, headers and value — into a
// Record. The consumer fills out's Topic, Partition, Offset, Key and
// Timestamp before calling Decode, and has already checked the value
// against ingest.Config.Limits.MaxMessageBytes.
//
// A nil error delivers out to the handler. A *PartialError delivers out and
// also writes the record to the DLQ marked partial. Any other error sends
// the record to the DLQ and does not deliver it; the error's kind (see
// ingest.ErrorKind) comes from the schemas sentinel it wraps (ErrTooLarge,
// ErrMalformed, ErrInvalid; anything else counts as malformed) and its
// field from a wrapped *schemas.FieldError. A panic is recovered and treated
// as a malformed record.
//
// The headers slice is the consumer's and is reused once Decode returns
// (the header values and value themselves stay valid: out may keep them).
//
// Decode is called on the partition's goroutine; one Decoder serves every
// partition of its topic, so it must be safe for concurrent use.
type Decoder interface {
	Decode(offset int64, headers []Header, value []byte, out *Record) error
}

// DecoderFunc adapts a function to Decoder.
type DecoderFunc func(offset int64, headers []Header, value []byte, out *Record) error

// Decode calls f.
func (f DecoderFunc) Decode(offset int64, headers []Header, value []byte, out *Record) error {
	return f(offset, headers, value, out)
}

// InvalidSpan is one span of a message that failed Span.Validate.
type InvalidSpan struct {
	// Index is the span's position among the message's LLM spans (those
	// carrying a model), in message order: decoding the DLQ record again
	// yields the same order.
	Index int
	Err   error
}

// PartialError is returned by a Decoder when a record decoded but some of
// its spans are invalid: the valid spans are delivered, and the record goes
// to the DLQ unchanged, with fusebox.dlq.partial=true and one
// fusebox.dlq.invalid_span header per invalid span.
type PartialError struct {
	Invalid []InvalidSpan
	// Total is the number of LLM spans the message held.
	Total int
	// Evaluations is why the message's gen_ai.evaluation.result events
	// (some or all) made no correction, nil when they all did: the spans
	// and the other corrections are delivered, the record is dead-lettered
	// as partial.
	Evaluations error
}

func (e *PartialError) Error() string {
	if len(e.Invalid) == 0 && e.Evaluations != nil {
		return "evaluation events: " + e.Evaluations.Error()
	}
	msg := strconv.Itoa(len(e.Invalid)) + " of " + strconv.Itoa(e.Total) + " spans invalid"
	if len(e.Invalid) > 0 {
		msg += "; first: span " + strconv.Itoa(e.Invalid[0].Index) + ": " + e.Invalid[0].Err.Error()
	}
	if e.Evaluations != nil {
		msg += "; evaluation events: " + e.Evaluations.Error()
	}
	return msg
}

// Unwrap returns the span errors, so that errors.Is(err, schemas.ErrInvalid)
// holds.
func (e *PartialError) Unwrap() []error {
	out := make([]error, len(e.Invalid), len(e.Invalid)+1)
	for i, s := range e.Invalid {
		out[i] = s.Err
	}
	if e.Evaluations != nil {
		out = append(out, e.Evaluations)
	}
	return out
}
