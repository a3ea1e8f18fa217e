package processors

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// ConfigError names the field of a processor's configuration that is wrong,
// relative to the processor's section (e.g. "p", "window"). The config
// loader prefixes the path and adds the file and line.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Reason }

// Check collects ConfigErrors; Err joins them.
type Check struct{ errs []error }

// Fail records a problem with field when bad is true.
func (c *Check) Fail(bad bool, field, reason string) {
	if bad {
		c.errs = append(c.errs, &ConfigError{Field: field, Reason: reason})
	}
}

// Window checks a window/every pair: both positive, the window a whole
// multiple of every (windows are built from slots of width every).
func (c *Check) Window(windowField string, window time.Duration, everyField string, every time.Duration) {
	c.Fail(every <= 0, everyField, "must be a positive duration")
	c.Fail(window <= 0, windowField, "must be a positive duration")
	if every > 0 && window > 0 {
		c.Fail(window%every != 0, windowField, "must be a whole multiple of "+everyField+" ("+every.String()+")")
	}
}

// Probability checks 0 < p < 1.
func (c *Check) Probability(field string, p float64) {
	c.Fail(!(p > 0 && p < 1), field, "must be in (0, 1), got "+strconv.FormatFloat(p, 'g', -1, 64))
}

// Err returns the joined errors, nil when none.
func (c *Check) Err() error { return errors.Join(c.errs...) }

// Metric names a numeric field of a span that processors can watch.
type Metric string

const (
	MetricDuration     Metric = "duration_ms"   // end - start, ms
	MetricTTFT         Metric = "ttft_ms"       // time to first token, ms
	MetricTPOT         Metric = "tpot_ms"       // time per output token, ms/token
	MetricInputTokens  Metric = "input_tokens"  // tokens
	MetricOutputTokens Metric = "output_tokens" // tokens
	MetricConfidence   Metric = "confidence"    // score in [0, 1]
	MetricAlignment    Metric = "alignment"     // score in [0, 1]
)

// Metrics lists every Metric.
var Metrics = []Metric{MetricDuration, MetricTTFT, MetricTPOT, MetricInputTokens, MetricOutputTokens, MetricConfidence, MetricAlignment}

// Valid reports whether m is one of Metrics.
func (m Metric) Valid() bool {
	for _, x := range Metrics {
		if m == x {
			return true
		}
	}
	return false
}

// Value returns the metric's value for s, and false when the span does not
// carry it (no TTFT, no confidence score...).
func (m Metric) Value(s *schemas.Span) (float64, bool) {
	switch m {
	case MetricDuration:
		return s.DurationMs, true
	case MetricTTFT:
		return s.TTFTMs, s.Has&schemas.HasTTFT != 0
	case MetricTPOT:
		return s.TPOTMs, s.Has&schemas.HasTPOT != 0
	case MetricInputTokens:
		return float64(s.InputTokens), s.Has&schemas.HasInputTokens != 0
	case MetricOutputTokens:
		return float64(s.OutputTokens), s.Has&schemas.HasOutputTokens != 0
	case MetricConfidence:
		return s.Confidence, s.Has&schemas.HasConfidence != 0
	case MetricAlignment:
		return s.Alignment, s.Has&schemas.HasAlignment != 0
	}
	return 0, false
}

// Latency reports whether m is a latency metric (duration_ms, ttft_ms,
// tpot_ms): one whose failed calls measure the failure (a 60 s timeout, a
// 5 ms refusal), not the service's speed.
func (m Metric) Latency() bool {
	return m == MetricDuration || m == MetricTTFT || m == MetricTPOT
}

// StreamOnly reports whether m exists only on streamed calls (ttft_ms,
// tpot_ms): a call whose span says it was not streamed has no first token
// before its answer, so its lack of the metric is by design, not a blind
// spot (see Unsampled).
func (m Metric) StreamOnly() bool { return m == MetricTTFT || m == MetricTPOT }

// Unsampled reports whether s lacks m where a value could be expected: it
// has no finite value of m, and it is not a call its span says was not
// streamed when m exists only on streamed calls. Such calls are what the
// no_samples verdicts count; a span without a streaming flag counts (fusebox
// cannot tell that its TTFT is missing by design).
func (m Metric) Unsampled(s *schemas.Span) bool {
	if _, ok := m.FiniteValue(s); ok {
		return false
	}
	return !(m.StreamOnly() && s.Has&schemas.HasStream != 0 && !s.Stream)
}

// FiniteValue is Value, with ok false also for a NaN or infinite value:
// one that a window of samples cannot use.
func (m Metric) FiniteValue(s *schemas.Span) (float64, bool) {
	v, ok := m.Value(s)
	return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
}
