package ingest

import (
	"errors"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// checkFuture numbers the spans it rejects as the decoder numbers LLM
// spans (past those the decoder rejected already), keeps the others, and
// rejects a record whole (kind future_event_time) when nothing is left.
func TestCheckFutureMergesWithTheDecodersInvalidSpans(t *testing.T) {
	ts := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) schemas.Span { return schemas.Span{EndUnixNano: ts.Add(d).UnixNano()} }
	// LLM spans 0..4: 0 invalid (decoder), 1 ok, 2 a day ahead, 3 invalid
	// (decoder), 4 within the skew.
	rec := &Record{Spans: []schemas.Span{at(0), at(24 * time.Hour), at(4 * time.Minute)}}
	dec := &PartialError{Invalid: []InvalidSpan{{Index: 0, Err: errors.New("bad")}, {Index: 3, Err: errors.New("bad")}}, Total: 5}
	err := checkFuture(rec, dec, ts, 5*time.Minute)
	var pe *PartialError
	if !errors.As(err, &pe) || pe.Total != 5 || len(pe.Invalid) != 3 ||
		pe.Invalid[0].Index != 0 || pe.Invalid[1].Index != 2 || pe.Invalid[2].Index != 3 {
		t.Fatalf("got %v", err)
	}
	if !errors.Is(pe.Invalid[1].Err, ErrFutureEventTime) || len(rec.Spans) != 2 {
		t.Fatalf("span 2: %v; %d spans kept, want 2", pe.Invalid[1].Err, len(rec.Spans))
	}
	if k := classify(&PartialError{Invalid: pe.Invalid[1:2], Total: 5}); k != KindFutureEventTime {
		t.Fatalf("kind of a record only ahead of time: %s", k)
	}

	whole := &Record{Corrections: []schemas.Correction{{TimeUnixNano: ts.Add(time.Hour).UnixNano()}}}
	if err := checkFuture(whole, nil, ts, 5*time.Minute); classify(err) != KindFutureEventTime || len(whole.Corrections) != 0 {
		t.Fatalf("correction an hour ahead: %v (kind %s)", err, classify(err))
	}
	// No timestamp (-1): not judged.
	old := &Record{Spans: []schemas.Span{at(24 * time.Hour)}}
	if err := checkFuture(old, nil, time.UnixMilli(-1), 5*time.Minute); err != nil || len(old.Spans) != 1 {
		t.Fatalf("record without a timestamp judged: %v", err)
	}
}
