// Package gen publishes the traffic of a traffic.Scenario to Kafka as a
// real deployment would see it: OTLP span batches (the LLM calls and the
// non-LLM spans of the same traces, as an OpenTelemetry Collector's kafka
// exporter writes them) and correction events, paced against the wall
// clock. `fusebox gen` runs it as a command and `fusebox demo` in-process.
//
// The same Config (seed included) writes the same record keys and values in
// the same order, whatever the pacing: the generator has no clock, only the
// pacing here reads one.
package gen

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Span encodings.
const (
	EncodingProto = "otlp_proto" // OTLP protobuf TracesData, the Collector's default
	EncodingJSON  = "otlp_json"  // OTLP/JSON
)

// Defaults of Config.
const (
	DefaultSpansTopic       = "otlp_spans"
	DefaultCorrectionsTopic = "fusebox.corrections"
	DefaultSpansPerMessage  = 100
	DefaultStep             = time.Second
	DefaultProgressEvery    = 5 * time.Second
	DefaultFlushTimeout     = 30 * time.Second
	// MaxSpansPerMessage bounds SpansPerMessage: fusebox's decoder refuses
	// more than 100,000 spans in one message by default.
	MaxSpansPerMessage = 100_000
)

// Config says what to publish and how fast.
type Config struct {
	// Scenario is the traffic: its Seed, Rate (calls per second of event
	// time) and Duration (event time; 0 runs until the context ends) as
	// they should be used.
	Scenario traffic.Scenario
	// Start is the event time of the first call. Required.
	Start time.Time
	// Speedup is how many times faster than the wall clock event time
	// runs: 1 is real time, 60 plays an hour in a minute. 0 does not pace
	// at all: as fast as the broker takes it.
	Speedup float64
	// SpansTopic receives the span batches. Default "otlp_spans".
	SpansTopic string
	// CorrectionsTopic receives one correction event per message. Default
	// "fusebox.corrections".
	CorrectionsTopic string
	// Encoding of the span batches: EncodingProto (default) or
	// EncodingJSON.
	Encoding string
	// SpansPerMessage is the most spans in one message, like a Collector
	// export batch. Default 100. Ignored with KeyByTrace.
	SpansPerMessage int
	// KeyByTrace writes one message per trace, keyed by its 32-hex trace
	// id, as the Collector's kafka exporter does with
	// partition_traces_by_id. Default off: no key.
	KeyByTrace bool
	// Attributes names the span attributes written for tenant, variant,
	// session, route, confidence and alignment. Empty names take the
	// defaults of schemas.DefaultAttributeNames.
	Attributes schemas.AttributeNames
	// Step is the event time generated at once; the messages of a step are
	// published together. Default 1s.
	Step time.Duration
	// Progress, when set, is called every ProgressEvery of wall time (and
	// not concurrently with itself) with the counts so far.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// FlushTimeout bounds the wait for records in flight once generation
	// stops (the end of the scenario, or the context ends). Default 30s.
	FlushTimeout time.Duration
}

// DefaultConfig returns the defaults with the built-in demo scenario; Start
// is left for the caller.
func DefaultConfig() Config {
	return Config{
		Scenario:         traffic.Demo(),
		Speedup:          1,
		SpansTopic:       DefaultSpansTopic,
		CorrectionsTopic: DefaultCorrectionsTopic,
		Encoding:         EncodingProto,
		SpansPerMessage:  DefaultSpansPerMessage,
		Step:             DefaultStep,
		ProgressEvery:    DefaultProgressEvery,
		FlushTimeout:     DefaultFlushTimeout,
	}
}

// withDefaults fills the zero fields that have defaults.
func (c Config) withDefaults() Config {
	if c.SpansTopic == "" {
		c.SpansTopic = DefaultSpansTopic
	}
	if c.CorrectionsTopic == "" {
		c.CorrectionsTopic = DefaultCorrectionsTopic
	}
	if c.Encoding == "" {
		c.Encoding = EncodingProto
	}
	if c.SpansPerMessage == 0 {
		c.SpansPerMessage = DefaultSpansPerMessage
	}
	if c.Step == 0 {
		c.Step = DefaultStep
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = DefaultProgressEvery
	}
	if c.FlushTimeout == 0 {
		c.FlushTimeout = DefaultFlushTimeout
	}
	def := schemas.DefaultAttributeNames()
	for _, f := range []struct {
		v *string
		d string
	}{
		{&c.Attributes.Tenant, def.Tenant}, {&c.Attributes.Variant, def.Variant},
		{&c.Attributes.Confidence, def.Confidence}, {&c.Attributes.Alignment, def.Alignment},
		{&c.Attributes.Session, def.Session}, {&c.Attributes.Route, def.Route},
	} {
		if *f.v == "" {
			*f.v = f.d
		}
	}
	return c
}

// Validate reports every problem with the config (after defaults), naming
// the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(cond bool, field, format string, args ...any) {
		if cond {
			errs = append(errs, fmt.Errorf("gen: %s: %s", field, fmt.Sprintf(format, args...)))
		}
	}
	if err := c.Scenario.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("gen: %w", err))
	}
	bad(c.Scenario.Duration < 0, "Duration", "%v is negative", c.Scenario.Duration)
	bad(c.Start.IsZero(), "Start", "must be set (the event time of the first call)")
	bad(c.Start.UnixNano() <= 0 && !c.Start.IsZero(), "Start", "%v is not after 1970", c.Start)
	bad(!(c.Speedup >= 0) || math.IsInf(c.Speedup, 0), "Speedup", "%v: want 0 (no pacing) or a positive finite factor", c.Speedup)
	bad(c.Encoding != EncodingProto && c.Encoding != EncodingJSON, "Encoding", "%q: want %s or %s", c.Encoding, EncodingProto, EncodingJSON)
	bad(c.SpansPerMessage < 1 || c.SpansPerMessage > MaxSpansPerMessage, "SpansPerMessage", "%d: want 1 to %d", c.SpansPerMessage, MaxSpansPerMessage)
	bad(c.SpansTopic == c.CorrectionsTopic, "CorrectionsTopic", "%q is also the spans topic", c.CorrectionsTopic)
	bad(c.Step < time.Millisecond, "Step", "%v: want at least 1ms", c.Step)
	bad(c.ProgressEvery < 0, "ProgressEvery", "%v is negative", c.ProgressEvery)
	bad(c.FlushTimeout < 0, "FlushTimeout", "%v is negative", c.FlushTimeout)
	return errors.Join(errs...)
}
