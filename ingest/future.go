package ingest

import (
	"errors"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// DefaultMaxFutureSkew is how far an event time may be ahead of its
// record's Kafka timestamp by default (see MaxFutureSkew).
const DefaultMaxFutureSkew = 5 * time.Minute

// ErrFutureEventTime is wrapped by the error of a span or correction whose
// event time (span end, correction time) is more than MaxFutureSkew ahead
// of the Kafka timestamp of the record that carried it: a client clock far
// fast, or a corrupt end time (year 2262). Such an event would move the
// watermark far ahead and make the normal traffic of every tenant late, so
// it is dead-lettered (kind future_event_time) instead. The Kafka timestamp
// is stored with the record, so a replay decides the same.
var ErrFutureEventTime = errors.New("event time too far ahead of the record's Kafka timestamp")

// futureError is ErrFutureEventTime for one span or correction.
type futureError struct {
	field        string
	event, kafka int64 // Unix ns
	skew         time.Duration
}

func (e *futureError) Error() string {
	return e.field + ": " + e.reason()
}

func (e *futureError) reason() string {
	ahead := time.Duration(e.event - e.kafka)
	return "event time " + time.Unix(0, e.event).UTC().Format(time.RFC3339Nano) + " is " + ahead.String() +
		" ahead of the record's Kafka timestamp " + time.Unix(0, e.kafka).UTC().Format(time.RFC3339Nano) +
		" (time.max_future_skew " + e.skew.String() + ")"
}

// Unwrap matches ErrFutureEventTime and names the field.
func (e *futureError) Unwrap() []error {
	return []error{ErrFutureEventTime, &schemas.FieldError{Field: e.field, Reason: e.reason()}}
}

// checkFuture removes from rec the spans and corrections whose event time is
// more than skew ahead of the Kafka timestamp ts, and returns the error
// the record goes to the DLQ with: nil when nothing was removed, a
// *PartialError when something valid is left (merged with the decoder's
// own partial error, indices in the decoder's numbering of LLM spans), or
// a whole-record error when nothing is. A record without a usable
// timestamp (before 1970, as old producers write -1) is not judged.
func checkFuture(rec *Record, decErr error, ts time.Time, skew time.Duration) error {
	if skew <= 0 || ts.UnixMilli() <= 0 || (len(rec.Spans) == 0 && len(rec.Corrections) == 0) {
		return decErr
	}
	limit := ts.UnixNano() + int64(skew)
	var pe *PartialError
	if decErr != nil && !errors.As(decErr, &pe) {
		return decErr
	}
	var bad []InvalidSpan
	if len(rec.Spans) > 0 && anyAfter(rec.Spans, limit) {
		// The decoder's indices count every LLM span, invalid ones too:
		// number the kept ones the same way.
		idx := keptIndices(pe, len(rec.Spans))
		kept := rec.Spans[:0]
		for i := range rec.Spans {
			s := rec.Spans[i]
			if s.EndUnixNano > limit {
				bad = append(bad, InvalidSpan{Index: idx[i], Err: &futureError{field: "spans[" + strconv.Itoa(idx[i]) + "].end_time", event: s.EndUnixNano, kafka: ts.UnixNano(), skew: skew}})
				continue
			}
			kept = append(kept, s)
		}
		clear(rec.Spans[len(kept):])
		rec.Spans = kept
	}
	var badCorr error
	if len(rec.Corrections) > 0 {
		kept := rec.Corrections[:0]
		for _, c := range rec.Corrections {
			if c.TimeUnixNano > limit {
				badCorr = &futureError{field: "time", event: c.TimeUnixNano, kafka: ts.UnixNano(), skew: skew}
				continue
			}
			kept = append(kept, c)
		}
		rec.Corrections = kept
	}
	if len(bad) == 0 && badCorr == nil {
		return decErr
	}
	total := len(rec.Spans) + len(bad)
	if pe != nil {
		bad = mergeInvalid(pe.Invalid, bad)
		total = pe.Total
	}
	if len(rec.Spans) == 0 && len(rec.Corrections) == 0 {
		if badCorr != nil && len(bad) == 0 {
			return badCorr
		}
		return &allInvalidError{PartialError{Invalid: bad, Total: total}}
	}
	return &PartialError{Invalid: bad, Total: total}
}

func anyAfter(spans []schemas.Span, limit int64) bool {
	for i := range spans {
		if spans[i].EndUnixNano > limit {
			return true
		}
	}
	return false
}

// keptIndices returns the decoder's index of each of the n delivered spans:
// 0..n-1 shifted past the indices pe names as invalid.
func keptIndices(pe *PartialError, n int) []int {
	out := make([]int, 0, n)
	skip := map[int]bool{}
	if pe != nil {
		for _, s := range pe.Invalid {
			skip[s.Index] = true
		}
	}
	for i := 0; len(out) < n; i++ {
		if !skip[i] {
			out = append(out, i)
		}
	}
	return out
}

// mergeInvalid merges two index-sorted lists.
func mergeInvalid(a, b []InvalidSpan) []InvalidSpan {
	out := make([]InvalidSpan, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Index < b[0].Index {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}
