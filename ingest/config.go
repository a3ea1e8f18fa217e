package ingest

import (
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults of the options. Each option's doc comment repeats its default.
const (
	DefaultSpanTopic          = "otlp_spans"
	DefaultCorrectionTopic    = "fusebox.corrections"
	DefaultLogTopic           = "otlp_logs"
	DefaultDLQTopic           = "fusebox.dlq"
	DefaultMaxUnackedRecords  = 10_000
	DefaultMaxUnackedBytes    = 64 << 20
	DefaultCommitInterval     = time.Second
	DefaultCloseTimeout       = 20 * time.Second
	DefaultDLQRetryBackoffMax = 5 * time.Second
)

// ErrConfig is wrapped by every error New returns for a bad option.
var ErrConfig = errors.New("ingest: invalid configuration")

// ConfigError names the option that is wrong and why. It wraps ErrConfig.
type ConfigError struct {
	Option string
	Reason string
}

func (e *ConfigError) Error() string { return "ingest: option " + e.Option + ": " + e.Reason }

// Unwrap lets errors.Is(err, ErrConfig) match.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// Encoding is how span messages are encoded.
type Encoding int

const (
	// EncodingAuto sniffs each message: a first non-whitespace byte '{' means
	// OTLP/JSON, anything else OTLP/protobuf. The sniff cannot be fooled by a
	// valid TracesData: '{' (0x7B) would be field 15 with wire type 3, which
	// TracesData does not have.
	EncodingAuto Encoding = iota
	// EncodingProto is otlp_proto, the Collector's default.
	EncodingProto
	// EncodingJSON is otlp_json.
	EncodingJSON
)

// String is the configuration name: "auto", "otlp_proto" or "otlp_json".
func (e Encoding) String() string {
	switch e {
	case EncodingAuto:
		return "auto"
	case EncodingProto:
		return "otlp_proto"
	case EncodingJSON:
		return "otlp_json"
	}
	return "Encoding(" + strconv.Itoa(int(e)) + ")"
}

// ParseEncoding parses the names String returns.
func ParseEncoding(s string) (Encoding, error) {
	switch s {
	case "auto", "":
		return EncodingAuto, nil
	case "otlp_proto":
		return EncodingProto, nil
	case "otlp_json":
		return EncodingJSON, nil
	}
	return 0, &ConfigError{Option: "SpanEncoding", Reason: "unknown encoding " + strconv.Quote(s) + " (want auto, otlp_proto or otlp_json)"}
}

// HandlerFactory returns the handler of one assigned partition. It is called
// once per assignment of the partition (again after a revoke and a new
// assignment), from the group's rebalance callback: it must not block.
type HandlerFactory func(topic string, partition int32) PartitionHandler

// Config configures a Consumer. New starts from DefaultConfig and applies
// the options, each of which sets one field (see the option of the same
// name for the field's meaning and default); Validate checks it.
type Config struct {
	Brokers            []string
	Group              string
	SpanTopics         []string
	CorrectionTopics   []string
	LogTopics          []string
	Evaluations        schemas.EvaluationMapping
	SpanEncoding       Encoding
	Attributes         schemas.AttributeNames
	Limits             schemas.Limits
	DLQTopic           string
	Decoders           map[string]Decoder // per-topic decoder overrides (TopicDecoder)
	Handlers           HandlerFactory
	MaxUnackedRecords  int
	MaxUnackedBytes    int64
	CommitInterval     time.Duration
	CloseTimeout       time.Duration
	IdleInterval       time.Duration
	DLQRetryBackoffMax time.Duration
	MaxFutureSkew      time.Duration
	RejectLogEvery     time.Duration
	ClientOpts         []kgo.Opt
	Logger             *slog.Logger

	errs []error // from options that could not be applied
}

// DefaultConfig returns the defaults listed on the options.
func DefaultConfig() Config {
	return Config{
		SpanTopics:         []string{DefaultSpanTopic},
		CorrectionTopics:   []string{DefaultCorrectionTopic},
		SpanEncoding:       EncodingAuto,
		Attributes:         schemas.DefaultAttributeNames(),
		Limits:             schemas.DefaultLimits(),
		DLQTopic:           DefaultDLQTopic,
		Decoders:           map[string]Decoder{},
		MaxUnackedRecords:  DefaultMaxUnackedRecords,
		MaxUnackedBytes:    DefaultMaxUnackedBytes,
		CommitInterval:     DefaultCommitInterval,
		CloseTimeout:       DefaultCloseTimeout,
		IdleInterval:       time.Second,
		DLQRetryBackoffMax: DefaultDLQRetryBackoffMax,
		MaxFutureSkew:      DefaultMaxFutureSkew,
		RejectLogEvery:     DefaultRejectLogEvery,
		Logger:             slog.New(slog.DiscardHandler),
	}
}

// Opt configures a Consumer. Options are applied in order and validated
// once, in New.
type Opt interface{ apply(*Config) }

type optFunc func(*Config)

func (f optFunc) apply(c *Config) { f(c) }

// Brokers sets the seed brokers ("host:port"). Required.
func Brokers(addrs ...string) Opt {
	return optFunc(func(c *Config) { c.Brokers = append([]string(nil), addrs...) })
}

// Group sets the consumer group id. Required.
func Group(id string) Opt { return optFunc(func(c *Config) { c.Group = id }) }

// SpanTopics sets the topics holding OTLP spans (default ["otlp_spans"]).
// SpanTopics() with no argument consumes no span topic.
func SpanTopics(topics ...string) Opt {
	return optFunc(func(c *Config) { c.SpanTopics = append([]string(nil), topics...) })
}

// CorrectionTopics sets the topics holding correction events (default
// ["fusebox.corrections"]). CorrectionTopics() with no argument consumes no
// correction topic.
func CorrectionTopics(topics ...string) Opt {
	return optFunc(func(c *Config) { c.CorrectionTopics = append([]string(nil), topics...) })
}

// LogTopics sets the topics holding OTLP logs (LogsData, as the Collector's
// kafka exporter writes them; its default topic is DefaultLogTopic), read
// for gen_ai.evaluation.result events (default none). They take the span
// encoding (SpanEncoding) and need an Evaluations mapping with rules.
func LogTopics(topics ...string) Opt {
	return optFunc(func(c *Config) { c.LogTopics = append([]string(nil), topics...) })
}

// Evaluations sets the rules that turn gen_ai.evaluation.result events (on
// spans of the span topics, and log records of the log topics) into
// corrections (default none: the events are not read).
func Evaluations(m schemas.EvaluationMapping) Opt {
	return optFunc(func(c *Config) { c.Evaluations = m })
}

// SpanEncoding sets how span messages are decoded (default EncodingAuto).
func SpanEncoding(e Encoding) Opt { return optFunc(func(c *Config) { c.SpanEncoding = e }) }

// Attributes sets the configurable span attribute names (default
// schemas.DefaultAttributeNames()).
func Attributes(n schemas.AttributeNames) Opt { return optFunc(func(c *Config) { c.Attributes = n }) }

// Limits sets what one message may make fusebox hold (default
// schemas.DefaultLimits()). MaxMessageBytes is checked by the consumer on the
// record value before any decoder runs, for every topic; the other limits are
// enforced inside the span decoders. A record past a limit goes to the DLQ
// with kind too_large.
func Limits(l schemas.Limits) Opt { return optFunc(func(c *Config) { c.Limits = l }) }

// DLQTopic sets the dead-letter topic (default "fusebox.dlq"). The topic
// must exist, or auto-creation must be allowed (pass
// kgo.AllowAutoTopicCreation() through ClientOpts): a DLQ write that fails
// is retried forever and holds back the commit of its partition.
func DLQTopic(topic string) Opt { return optFunc(func(c *Config) { c.DLQTopic = topic }) }

// TopicDecoder consumes topic with d instead of the built-in decoders. The
// topic is added to the subscription if it is not a span or correction topic;
// if it is, d replaces that topic's built-in decoder. The engine uses it for
// its internal keyed topic.
func TopicDecoder(topic string, d Decoder) Opt {
	return optFunc(func(c *Config) {
		if topic == "" || d == nil {
			c.errs = append(c.errs, &ConfigError{Option: "TopicDecoder", Reason: "needs a topic and a non-nil Decoder"})
			return
		}
		c.Decoders[topic] = d
	})
}

// Handlers sets the factory of partition handlers. Required.
func Handlers(f HandlerFactory) Opt { return optFunc(func(c *Config) { c.Handlers = f }) }

// MaxUnackedRecords bounds, per partition, the records handed to or queued
// for the handler whose batches are not yet acknowledged and durable
// (default 10,000). When a partition reaches it, fetching that partition is
// paused (other partitions keep flowing) and resumed once acks bring it
// below. One fetch may overshoot the bound by up to a fetch's worth of
// records (FetchMaxPartitionBytes, 1 MiB by default).
func MaxUnackedRecords(n int) Opt { return optFunc(func(c *Config) { c.MaxUnackedRecords = n }) }

// MaxUnackedBytes is MaxUnackedRecords counted in record value bytes
// (default 64 MiB per partition). Whichever bound is reached first pauses
// the partition.
func MaxUnackedBytes(n int64) Opt { return optFunc(func(c *Config) { c.MaxUnackedBytes = n }) }

// CommitInterval sets how often acknowledged offsets are committed (default
// 1s). Offsets are also committed synchronously when partitions are revoked
// and at shutdown.
func CommitInterval(d time.Duration) Opt { return optFunc(func(c *Config) { c.CommitInterval = d }) }

// IdleInterval is how long a partition whose handler implements Idler may
// go without a batch before Idle is called (default 1s).
func IdleInterval(d time.Duration) Opt { return optFunc(func(c *Config) { c.IdleInterval = d }) }

// CloseTimeout bounds how long revoking a partition may take (default 20s):
// the in-flight Handle call, PartitionHandler.Close and the wait for the
// partition's pending DLQ writes all share it. When it passes, the handler's
// context is canceled; offsets not yet acknowledged and durable are not
// committed and will be redelivered. Keep it below the group's rebalance
// timeout (kgo default 60s).
func CloseTimeout(d time.Duration) Opt { return optFunc(func(c *Config) { c.CloseTimeout = d }) }

// DLQRetryBackoffMax caps the backoff between retries of a failed DLQ
// write (default 5s; retries start at 100ms and double).
func DLQRetryBackoffMax(d time.Duration) Opt {
	return optFunc(func(c *Config) { c.DLQRetryBackoffMax = d })
}

// MaxFutureSkew is how far the event time of a span (its end) or a
// correction may be ahead of the Kafka timestamp of its record (default
// 5m; 0 turns the check off). Events further ahead are dead-lettered as
// future_event_time (ErrFutureEventTime) — alone when the rest of their
// message is valid — because one of them would move the watermark ahead
// and make everybody's traffic late. Records without a timestamp (-1, as
// producers before Kafka 0.10 write) are not judged.
func MaxFutureSkew(d time.Duration) Opt { return optFunc(func(c *Config) { c.MaxFutureSkew = d }) }

// RejectLogEvery is how often a source partition logs the count of the
// records of one kind it went on rejecting (default 1m). The first record
// of each kind on each partition is logged at once, with its error.
func RejectLogEvery(d time.Duration) Opt { return optFunc(func(c *Config) { c.RejectLogEvery = d }) }

// ClientOpts passes options to the franz-go client (TLS, SASL, fetch sizes,
// ConsumeResetOffset, ...). They are applied after fusebox's own, so they
// win; do not pass ConsumerGroup, ConsumeTopics, the OnPartitions* callbacks,
// AdjustFetchOffsetsFn, BlockRebalanceOnPoll or auto-commit options, which
// the consumer relies on. With no commit, consumption starts at the
// beginning of a partition (kgo.NewOffset().AtStart()): nothing published is
// skipped.
func ClientOpts(opts ...kgo.Opt) Opt {
	return optFunc(func(c *Config) { c.ClientOpts = append(c.ClientOpts, opts...) })
}

// Logger sets the logger (default: discard). Decoder panics, DLQ retries,
// commit failures and rebalances are logged.
func Logger(l *slog.Logger) Opt { return optFunc(func(c *Config) { c.Logger = l }) }

// Validate reports every invalid field (errors.Join of *ConfigError, each
// wrapping ErrConfig, named by the option that sets the field).
func (c *Config) Validate() error { return c.validate() }

func (c *Config) validate() error {
	errs := c.errs
	bad := func(opt, reason string) { errs = append(errs, &ConfigError{Option: opt, Reason: reason}) }
	if len(c.Brokers) == 0 {
		bad("Brokers", "at least one seed broker is required")
	}
	if c.Group == "" {
		bad("Group", "a consumer group id is required")
	}
	if c.Handlers == nil {
		bad("Handlers", "a HandlerFactory is required")
	}
	if len(c.topics()) == 0 {
		bad("SpanTopics/CorrectionTopics/TopicDecoder", "no topic to consume")
	}
	seen := map[string]string{}
	for _, t := range c.SpanTopics {
		seen[t] = "SpanTopics"
	}
	for _, t := range c.CorrectionTopics {
		if seen[t] != "" {
			bad("CorrectionTopics", "topic "+strconv.Quote(t)+" is also a span topic")
		}
		seen[t] = "CorrectionTopics"
	}
	for _, t := range c.LogTopics {
		if seen[t] != "" {
			bad("LogTopics", "topic "+strconv.Quote(t)+" is also one of "+seen[t])
		}
	}
	if err := c.Evaluations.Validate(); err != nil {
		bad("Evaluations", err.Error())
	}
	if len(c.LogTopics) > 0 && !c.Evaluations.Enabled() {
		bad("LogTopics", "log topics are read for evaluation events only: set Evaluations rules")
	}
	for _, t := range c.topics() {
		if t == "" {
			bad("SpanTopics/CorrectionTopics", "empty topic name")
		}
		if t == c.DLQTopic {
			bad("DLQTopic", "the DLQ topic "+strconv.Quote(t)+" is also consumed: a bad record would loop")
		}
	}
	if c.DLQTopic == "" {
		bad("DLQTopic", "must not be empty")
	}
	switch c.SpanEncoding {
	case EncodingAuto, EncodingProto, EncodingJSON:
	default:
		bad("SpanEncoding", "unknown encoding "+c.SpanEncoding.String())
	}
	if err := c.Attributes.Validate(); err != nil {
		bad("Attributes", err.Error())
	}
	if err := c.Limits.Validate(); err != nil {
		bad("Limits", err.Error())
	}
	if c.MaxUnackedRecords <= 0 {
		bad("MaxUnackedRecords", "must be positive")
	}
	if c.MaxUnackedBytes <= 0 {
		bad("MaxUnackedBytes", "must be positive")
	}
	if c.CommitInterval <= 0 {
		bad("CommitInterval", "must be positive")
	}
	if c.IdleInterval <= 0 {
		bad("IdleInterval", "must be positive")
	}
	if c.CloseTimeout <= 0 {
		bad("CloseTimeout", "must be positive")
	}
	if c.DLQRetryBackoffMax < 100*time.Millisecond {
		bad("DLQRetryBackoffMax", "must be at least 100ms")
	}
	if c.RejectLogEvery <= 0 {
		bad("RejectLogEvery", "must be positive")
	}
	if c.MaxFutureSkew < 0 {
		bad("MaxFutureSkew", "must not be negative")
	}
	if c.Logger == nil {
		bad("Logger", "must not be nil")
	}
	return errors.Join(errs...)
}

// topics is every topic consumed, in a stable order.
func (c *Config) topics() []string {
	var out []string
	seen := map[string]bool{}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range c.SpanTopics {
		add(t)
	}
	for _, t := range c.CorrectionTopics {
		add(t)
	}
	for _, t := range c.LogTopics {
		add(t)
	}
	extra := make([]string, 0, len(c.Decoders))
	for t := range c.Decoders {
		extra = append(extra, t)
	}
	slices.Sort(extra)
	for _, t := range extra {
		add(t)
	}
	return out
}

// decoderFor returns the decoder of a topic: an override, else the built-in
// span or correction decoder.
func (c *Config) decoderFor(topic string) Decoder {
	if d, ok := c.Decoders[topic]; ok {
		return d
	}
	for _, t := range c.SpanTopics {
		if t == topic {
			d := &SpanDecoder{Encoding: c.SpanEncoding, Names: c.Attributes, Limits: c.Limits}
			if c.Evaluations.Enabled() {
				d.Evaluations = &c.Evaluations
			}
			return d
		}
	}
	for _, t := range c.CorrectionTopics {
		if t == topic {
			return CorrectionDecoder{}
		}
	}
	for _, t := range c.LogTopics {
		if t == topic {
			return &EvaluationDecoder{Encoding: c.SpanEncoding, Names: c.Attributes, Limits: c.Limits, Evaluations: &c.Evaluations}
		}
	}
	return nil
}
