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

type config struct {
	brokers          []string
	group            string
	spanTopics       []string
	correctionTopics []string
	logTopics        []string
	evaluations      schemas.EvaluationMapping
	encoding         Encoding
	names            schemas.AttributeNames
	limits           schemas.Limits
	dlqTopic         string
	decoders         map[string]Decoder
	handlers         HandlerFactory
	maxUnacked       int
	maxUnackedBytes  int64
	commitInterval   time.Duration
	closeTimeout     time.Duration
	idleInterval     time.Duration
	dlqBackoffMax    time.Duration
	maxFutureSkew    time.Duration
	rejectLogEvery   time.Duration
	kgoOpts          []kgo.Opt
	log              *slog.Logger

	errs []error
}

func defaultConfig() config {
	return config{
		spanTopics:       []string{DefaultSpanTopic},
		correctionTopics: []string{DefaultCorrectionTopic},
		encoding:         EncodingAuto,
		names:            schemas.DefaultAttributeNames(),
		limits:           schemas.DefaultLimits(),
		dlqTopic:         DefaultDLQTopic,
		decoders:         map[string]Decoder{},
		maxUnacked:       DefaultMaxUnackedRecords,
		maxUnackedBytes:  DefaultMaxUnackedBytes,
		commitInterval:   DefaultCommitInterval,
		closeTimeout:     DefaultCloseTimeout,
		idleInterval:     time.Second,
		dlqBackoffMax:    DefaultDLQRetryBackoffMax,
		maxFutureSkew:    DefaultMaxFutureSkew,
		rejectLogEvery:   DefaultRejectLogEvery,
		log:              slog.New(slog.DiscardHandler),
	}
}

// Opt configures a Consumer. Options are applied in order and validated
// once, in New.
type Opt interface{ apply(*config) }

type optFunc func(*config)

func (f optFunc) apply(c *config) { f(c) }

// Brokers sets the seed brokers ("host:port"). Required.
func Brokers(addrs ...string) Opt {
	return optFunc(func(c *config) { c.brokers = append([]string(nil), addrs...) })
}

// Group sets the consumer group id. Required.
func Group(id string) Opt { return optFunc(func(c *config) { c.group = id }) }

// SpanTopics sets the topics holding OTLP spans (default ["otlp_spans"]).
// SpanTopics() with no argument consumes no span topic.
func SpanTopics(topics ...string) Opt {
	return optFunc(func(c *config) { c.spanTopics = append([]string(nil), topics...) })
}

// CorrectionTopics sets the topics holding correction events (default
// ["fusebox.corrections"]). CorrectionTopics() with no argument consumes no
// correction topic.
func CorrectionTopics(topics ...string) Opt {
	return optFunc(func(c *config) { c.correctionTopics = append([]string(nil), topics...) })
}

// LogTopics sets the topics holding OTLP logs (LogsData, as the Collector's
// kafka exporter writes them; its default topic is DefaultLogTopic), read
// for gen_ai.evaluation.result events (default none). They take the span
// encoding (SpanEncoding) and need an Evaluations mapping with rules.
func LogTopics(topics ...string) Opt {
	return optFunc(func(c *config) { c.logTopics = append([]string(nil), topics...) })
}

// Evaluations sets the rules that turn gen_ai.evaluation.result events (on
// spans of the span topics, and log records of the log topics) into
// corrections (default none: the events are not read).
func Evaluations(m schemas.EvaluationMapping) Opt {
	return optFunc(func(c *config) { c.evaluations = m })
}

// SpanEncoding sets how span messages are decoded (default EncodingAuto).
func SpanEncoding(e Encoding) Opt { return optFunc(func(c *config) { c.encoding = e }) }

// Attributes sets the configurable span attribute names (default
// schemas.DefaultAttributeNames()).
func Attributes(n schemas.AttributeNames) Opt { return optFunc(func(c *config) { c.names = n }) }

// Limits sets what one message may make fusebox hold (default
// schemas.DefaultLimits()). MaxMessageBytes is checked by the consumer on the
// record value before any decoder runs, for every topic; the other limits are
// enforced inside the span decoders. A record past a limit goes to the DLQ
// with kind too_large.
func Limits(l schemas.Limits) Opt { return optFunc(func(c *config) { c.limits = l }) }

// DLQTopic sets the dead-letter topic (default "fusebox.dlq"). The topic
// must exist, or auto-creation must be allowed (pass
// kgo.AllowAutoTopicCreation() through ClientOpts): a DLQ write that fails
// is retried forever and holds back the commit of its partition.
func DLQTopic(topic string) Opt { return optFunc(func(c *config) { c.dlqTopic = topic }) }

// TopicDecoder consumes topic with d instead of the built-in decoders. The
// topic is added to the subscription if it is not a span or correction topic;
// if it is, d replaces that topic's built-in decoder. The engine uses it for
// its internal keyed topic.
func TopicDecoder(topic string, d Decoder) Opt {
	return optFunc(func(c *config) {
		if topic == "" || d == nil {
			c.errs = append(c.errs, &ConfigError{Option: "TopicDecoder", Reason: "needs a topic and a non-nil Decoder"})
			return
		}
		c.decoders[topic] = d
	})
}

// Handlers sets the factory of partition handlers. Required.
func Handlers(f HandlerFactory) Opt { return optFunc(func(c *config) { c.handlers = f }) }

// MaxUnackedRecords bounds, per partition, the records handed to or queued
// for the handler whose batches are not yet acknowledged and durable
// (default 10,000). When a partition reaches it, fetching that partition is
// paused (other partitions keep flowing) and resumed once acks bring it
// below. One fetch may overshoot the bound by up to a fetch's worth of
// records (FetchMaxPartitionBytes, 1 MiB by default).
func MaxUnackedRecords(n int) Opt { return optFunc(func(c *config) { c.maxUnacked = n }) }

// MaxUnackedBytes is MaxUnackedRecords counted in record value bytes
// (default 64 MiB per partition). Whichever bound is reached first pauses
// the partition.
func MaxUnackedBytes(n int64) Opt { return optFunc(func(c *config) { c.maxUnackedBytes = n }) }

// CommitInterval sets how often acknowledged offsets are committed (default
// 1s). Offsets are also committed synchronously when partitions are revoked
// and at shutdown.
func CommitInterval(d time.Duration) Opt { return optFunc(func(c *config) { c.commitInterval = d }) }

// IdleInterval is how long a partition whose handler implements Idler may
// go without a batch before Idle is called (default 1s).
func IdleInterval(d time.Duration) Opt { return optFunc(func(c *config) { c.idleInterval = d }) }

// CloseTimeout bounds how long revoking a partition may take (default 20s):
// the in-flight Handle call, PartitionHandler.Close and the wait for the
// partition's pending DLQ writes all share it. When it passes, the handler's
// context is canceled; offsets not yet acknowledged and durable are not
// committed and will be redelivered. Keep it below the group's rebalance
// timeout (kgo default 60s).
func CloseTimeout(d time.Duration) Opt { return optFunc(func(c *config) { c.closeTimeout = d }) }

// DLQRetryBackoffMax caps the backoff between retries of a failed DLQ
// write (default 5s; retries start at 100ms and double).
func DLQRetryBackoffMax(d time.Duration) Opt { return optFunc(func(c *config) { c.dlqBackoffMax = d }) }

// MaxFutureSkew is how far the event time of a span (its end) or a
// correction may be ahead of the Kafka timestamp of its record (default
// 5m; 0 turns the check off). Events further ahead are dead-lettered as
// future_event_time (ErrFutureEventTime) — alone when the rest of their
// message is valid — because one of them would move the watermark ahead
// and make everybody's traffic late. Records without a timestamp (-1, as
// producers before Kafka 0.10 write) are not judged.
func MaxFutureSkew(d time.Duration) Opt { return optFunc(func(c *config) { c.maxFutureSkew = d }) }

// RejectLogEvery is how often a source partition logs the count of the
// records of one kind it went on rejecting (default 1m). The first record
// of each kind on each partition is logged at once, with its error.
func RejectLogEvery(d time.Duration) Opt { return optFunc(func(c *config) { c.rejectLogEvery = d }) }

// ClientOpts passes options to the franz-go client (TLS, SASL, fetch sizes,
// ConsumeResetOffset, ...). They are applied after fusebox's own, so they
// win; do not pass ConsumerGroup, ConsumeTopics, the OnPartitions* callbacks,
// AdjustFetchOffsetsFn, BlockRebalanceOnPoll or auto-commit options, which
// the consumer relies on. With no commit, consumption starts at the
// beginning of a partition (kgo.NewOffset().AtStart()): nothing published is
// skipped.
func ClientOpts(opts ...kgo.Opt) Opt {
	return optFunc(func(c *config) { c.kgoOpts = append(c.kgoOpts, opts...) })
}

// Logger sets the logger (default: discard). Decoder panics, DLQ retries,
// commit failures and rebalances are logged.
func Logger(l *slog.Logger) Opt { return optFunc(func(c *config) { c.log = l }) }

func (c *config) validate() error {
	errs := c.errs
	bad := func(opt, reason string) { errs = append(errs, &ConfigError{Option: opt, Reason: reason}) }
	if len(c.brokers) == 0 {
		bad("Brokers", "at least one seed broker is required")
	}
	if c.group == "" {
		bad("Group", "a consumer group id is required")
	}
	if c.handlers == nil {
		bad("Handlers", "a HandlerFactory is required")
	}
	if len(c.topics()) == 0 {
		bad("SpanTopics/CorrectionTopics/TopicDecoder", "no topic to consume")
	}
	seen := map[string]string{}
	for _, t := range c.spanTopics {
		seen[t] = "SpanTopics"
	}
	for _, t := range c.correctionTopics {
		if seen[t] != "" {
			bad("CorrectionTopics", "topic "+strconv.Quote(t)+" is also a span topic")
		}
		seen[t] = "CorrectionTopics"
	}
	for _, t := range c.logTopics {
		if seen[t] != "" {
			bad("LogTopics", "topic "+strconv.Quote(t)+" is also one of "+seen[t])
		}
	}
	if err := c.evaluations.Validate(); err != nil {
		bad("Evaluations", err.Error())
	}
	if len(c.logTopics) > 0 && !c.evaluations.Enabled() {
		bad("LogTopics", "log topics are read for evaluation events only: set Evaluations rules")
	}
	for _, t := range c.topics() {
		if t == "" {
			bad("SpanTopics/CorrectionTopics", "empty topic name")
		}
		if t == c.dlqTopic {
			bad("DLQTopic", "the DLQ topic "+strconv.Quote(t)+" is also consumed: a bad record would loop")
		}
	}
	if c.dlqTopic == "" {
		bad("DLQTopic", "must not be empty")
	}
	switch c.encoding {
	case EncodingAuto, EncodingProto, EncodingJSON:
	default:
		bad("SpanEncoding", "unknown encoding "+c.encoding.String())
	}
	if err := c.names.Validate(); err != nil {
		bad("Attributes", err.Error())
	}
	if err := c.limits.Validate(); err != nil {
		bad("Limits", err.Error())
	}
	if c.maxUnacked <= 0 {
		bad("MaxUnackedRecords", "must be positive")
	}
	if c.maxUnackedBytes <= 0 {
		bad("MaxUnackedBytes", "must be positive")
	}
	if c.commitInterval <= 0 {
		bad("CommitInterval", "must be positive")
	}
	if c.idleInterval <= 0 {
		bad("IdleInterval", "must be positive")
	}
	if c.closeTimeout <= 0 {
		bad("CloseTimeout", "must be positive")
	}
	if c.dlqBackoffMax < 100*time.Millisecond {
		bad("DLQRetryBackoffMax", "must be at least 100ms")
	}
	if c.rejectLogEvery <= 0 {
		bad("RejectLogEvery", "must be positive")
	}
	if c.maxFutureSkew < 0 {
		bad("MaxFutureSkew", "must not be negative")
	}
	if c.log == nil {
		bad("Logger", "must not be nil")
	}
	return errors.Join(errs...)
}

// topics is every topic consumed, in a stable order.
func (c *config) topics() []string {
	var out []string
	seen := map[string]bool{}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range c.spanTopics {
		add(t)
	}
	for _, t := range c.correctionTopics {
		add(t)
	}
	for _, t := range c.logTopics {
		add(t)
	}
	extra := make([]string, 0, len(c.decoders))
	for t := range c.decoders {
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
func (c *config) decoderFor(topic string) Decoder {
	if d, ok := c.decoders[topic]; ok {
		return d
	}
	for _, t := range c.spanTopics {
		if t == topic {
			d := &SpanDecoder{Encoding: c.encoding, Names: c.names, Limits: c.limits}
			if c.evaluations.Enabled() {
				d.Evaluations = &c.evaluations
			}
			return d
		}
	}
	for _, t := range c.correctionTopics {
		if t == topic {
			return CorrectionDecoder{}
		}
	}
	for _, t := range c.logTopics {
		if t == topic {
			return &EvaluationDecoder{Encoding: c.encoding, Names: c.names, Limits: c.limits, Evaluations: &c.evaluations}
		}
	}
	return nil
}
