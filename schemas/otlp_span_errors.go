package schemas

import "strconv"

// SpanError is one LLM span of a message rejected for a bad attribute.
type SpanError struct {
	// Index is the span's position among the message's LLM spans (those
	// carrying a model, rejected ones included), in message order.
	Index int
	Err   error
}

// SpanErrors is returned, with the message's other spans, when some of its
// LLM spans were rejected for a bad attribute: the spans named are not in
// the returned slice. It wraps each span's error, so errors.Is(err,
// ErrInvalid) (wrong type) or ErrMalformed (invalid UTF-8) holds.
type SpanErrors struct {
	Spans []SpanError
	// Total is the number of LLM spans the message held.
	Total int
}

func (e *SpanErrors) Error() string {
	return strconv.Itoa(len(e.Spans)) + " of " + strconv.Itoa(e.Total) + " spans rejected; first: span " +
		strconv.Itoa(e.Spans[0].Index) + ": " + e.Spans[0].Err.Error()
}

// Unwrap returns the span errors.
func (e *SpanErrors) Unwrap() []error {
	out := make([]error, len(e.Spans))
	for i, s := range e.Spans {
		out[i] = s.Err
	}
	return out
}

// spanErrors is the *SpanErrors of the spans rejected, nil when none was.
func (mp *mapper) spanErrors() error {
	if len(mp.rejected) == 0 {
		return nil
	}
	return &SpanErrors{Spans: mp.rejected, Total: mp.llm}
}
