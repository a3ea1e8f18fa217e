// Package calibrate proposes a first SLO file from recorded traffic
// (`fusebox calibrate`): budgets from the clean data's tail estimates,
// thresholds from a false-trip target, minimum samples from each key's
// rate, and replays the traffic through the engine to show what the
// proposed (and the current) file would have done.
package calibrate

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Input is recorded traffic: LLM-call spans and correction events, in any
// order (Sort puts them in event-time order).
type Input struct {
	Spans       []schemas.Span
	Corrections []schemas.Correction
	// Skipped counts records left out: undecodable lines, invalid spans or
	// corrections (each also named in Problems, up to 20).
	Skipped  int
	Problems []string
}

func (in *Input) problem(format string, args ...any) {
	in.Skipped++
	if len(in.Problems) < 20 {
		in.Problems = append(in.Problems, fmt.Sprintf(format, args...))
	}
}

// ReadOTLPJSONLines reads one OTLP/JSON message (an
// ExportTraceServiceRequest, as the Collector's file exporter writes them)
// per line from r and appends its valid LLM-call spans. name labels
// problems (a file name). Blank lines are skipped.
func (in *Input) ReadOTLPJSONLines(r io.Reader, name string, names schemas.AttributeNames, lim schemas.Limits) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	var buf []schemas.Span
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var err error
		buf, _, err = schemas.DecodeOTLPJSON(b, names, lim, buf[:0])
		if err != nil {
			in.problem("%s:%d: %v", name, line, err)
			continue
		}
		for i := range buf {
			if err := buf[i].Validate(); err != nil {
				in.problem("%s:%d: span %d: %v", name, line, i, err)
				continue
			}
			in.Spans = append(in.Spans, buf[i])
		}
	}
	return sc.Err()
}

// ReadCorrectionLines reads one correction event (JSON,
// schemas/correction.v1.schema.json) per line from r.
func (in *Input) ReadCorrectionLines(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		c, err := schemas.DecodeCorrection(b)
		if err != nil {
			in.problem("%s:%d: %v", name, line, err)
			continue
		}
		in.Corrections = append(in.Corrections, c)
	}
	return sc.Err()
}

// Sort orders spans by (end time, trace id, span id) and corrections by
// (time, event id): the same records in any order give the same proposal
// and the same replay.
func (in *Input) Sort() {
	slices.SortStableFunc(in.Spans, func(a, b schemas.Span) int {
		if c := cmp.Compare(a.EndUnixNano, b.EndUnixNano); c != 0 {
			return c
		}
		if c := bytes.Compare(a.TraceID[:], b.TraceID[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.SpanID[:], b.SpanID[:])
	})
	slices.SortStableFunc(in.Corrections, func(a, b schemas.Correction) int {
		if c := cmp.Compare(a.TimeUnixNano, b.TimeUnixNano); c != 0 {
			return c
		}
		return cmp.Compare(a.EventID, b.EventID)
	})
}

// span returns the event-time range of the spans [first, last] (Unix ns).
func (in *Input) span() (first, last int64) {
	if len(in.Spans) == 0 {
		return 0, 0
	}
	return in.Spans[0].EndUnixNano, in.Spans[len(in.Spans)-1].EndUnixNano
}
