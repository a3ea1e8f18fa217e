// Package config loads and checks the SLO file, the one configuration file
// of `fusebox run`: Kafka, topics, attribute names, limits, key dimensions,
// time, the SLOs and their processors, the breaker policy, signing, sinks
// and the HTTP endpoints.
//
// Every default lives in Default(); the annotated example in
// examples/fusebox.yaml shows them all. Load reports every problem at once,
// each with the file, the line and the field path (e.g.
// "fusebox.yaml:42: slos[1].tail.p: must be in (0, 1), got 1.5").
package config

import (
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/schemas"
	"go.yaml.in/yaml/v3"
)

// File is the whole SLO file.
type File struct {
	// Version identifies the configuration in every verdict id and in the
	// engine's checkpoints. Default: 12 hex characters of a SHA-256 over
	// what decides the verdicts (keys, attributes, limits, the allowed
	// lateness, the SLOs, rollups and breaker) — so moving a broker or
	// editing a comment keeps it, and changing a budget changes it.
	Version    string                 `yaml:"version"`
	Kafka      Kafka                  `yaml:"kafka"`
	Topics     Topics                 `yaml:"topics"`
	Attributes schemas.AttributeNames `yaml:"attributes"`
	// Evaluations turns gen_ai.evaluation.result events (span events on the
	// span topics, log records on topics.logs) into corrections. Default:
	// no rules, the events are not read and topics.logs is not consumed.
	Evaluations schemas.EvaluationMapping `yaml:"evaluations"`
	Limits      schemas.Limits            `yaml:"limits"`
	// Answers defines a failed answer (schemas.Answers): a call that
	// succeeded but whose answer was cut off, filtered or empty. Counted
	// per key in the rollups; a burn-rate SLO counts them as bad events
	// with bad_events: [errors, failed_answers]. Default: finish reasons
	// length and content_filter, and empty output.
	Answers schemas.Answers `yaml:"answers"`
	Keys    Keys            `yaml:"keys"`
	Time    Time            `yaml:"time"`
	SLOs    []SLO           `yaml:"slos"`
	Rollups Rollups         `yaml:"rollups"`
	Breaker Breaker         `yaml:"breaker"`
	// Effect configures the effect verdict of every fuse command
	// (processors/effect).
	Effect Effect `yaml:"effect"`
	// Incidents attributes breaches across keys (the incident stage).
	Incidents Incidents `yaml:"incidents"`
	Signing   Signing   `yaml:"signing"`
	Sinks     Sinks     `yaml:"sinks"`
	HTTP      HTTP      `yaml:"http"`
	Log       Log       `yaml:"log"`
	// Compat is for rolling upgrades between builds (docs/state-and-upgrades.md).
	Compat Compat `yaml:"compat"`
}

// Compat keeps a deployment whose pods run two builds at once working
// during a rolling upgrade: the formats this build writes, that the pods of
// the build before it must read. It is not part of Version: it changes
// no verdict and no state id.
type Compat struct {
	// WriteFormats is current (the default) or previous. With previous,
	// the router writes keyed batches of version 2 (without the spans'
	// instrumentation scope) and the partition workers write checkpoints
	// of version 4 (without the idle durations): the formats of the build
	// before, which refuses the current ones (keyed batch 3, checkpoint 5).
	// Everything is read either way. Set it for the first step of a
	// rolling upgrade, remove it once every pod runs this build.
	WriteFormats string `yaml:"write_formats"`
}

// The values of compat.write_formats.
const (
	WriteFormatsCurrent  = "current"
	WriteFormatsPrevious = "previous"
)

// KeyedBatchVersion is the keyed-batch format version the router writes
// under c: 0 (the current one) or schemas.KeyedBatchVersion2.
func (c Compat) KeyedBatchVersion() byte {
	if c.WriteFormats == WriteFormatsPrevious {
		return schemas.KeyedBatchVersion2
	}
	return 0
}

// CheckpointVersion is the checkpoint format version the partition
// workers write under c: 0 (the current one) or 4.
func (c Compat) CheckpointVersion() uint8 {
	if c.WriteFormats == WriteFormatsPrevious {
		return 4
	}
	return 0
}

// Kafka is how fusebox reaches the brokers.
type Kafka struct {
	// Brokers are the seed addresses. Default [127.0.0.1:9092].
	Brokers []string `yaml:"brokers"`
	// Group is the consumer group prefix: the router joins
	// "<group>.router", the keyed stage "<group>.engine". It is also the
	// deployment's identity: its keyed records carry it (header fb.dep),
	// its checkpoints are keyed under it, and the keyed and state topics
	// default to "<group>.keyed" and "<group>.state". Default "fusebox".
	Group    string `yaml:"group"`
	ClientID string `yaml:"client_id"` // default "fusebox"
	// InstanceID turns on static group membership (KIP-345): a process
	// restarted after a crash (kill -9) with the same id gets its
	// partitions back as soon as it rejoins, instead of after the dead
	// member's session timeout (45s). It must be stable per process and
	// unique among the processes of a deployment (a StatefulSet pod name,
	// a compose service replica); "auto" uses the host name. Default ""
	// (dynamic membership). `fusebox run --instance-id` overrides it.
	InstanceID string `yaml:"instance_id"`
	// LeaveOnShutdown makes a static member (InstanceID set) leave its
	// groups at a clean shutdown (SIGTERM), so the other processes take its
	// partitions over at once: right when it shuts down for good (scale
	// in). false keeps its place for the session timeout (45s): right for
	// a rolling restart, where it comes back within seconds to the same
	// partitions and nothing is reassigned twice. Default true. Without
	// InstanceID a member always leaves.
	LeaveOnShutdown bool `yaml:"leave_on_shutdown"`
	TLS             TLS  `yaml:"tls"`
	SASL            SASL `yaml:"sasl"`
}

// TLS configures a TLS client.
type TLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SASL configures Kafka authentication.
type SASL struct {
	// Mechanism is "", PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	// Password, or PasswordEnv naming an environment variable holding it.
	Password    string `yaml:"password"`
	PasswordEnv string `yaml:"password_env"`
}

// Topics names every topic fusebox reads and writes.
type Topics struct {
	Spans        []string `yaml:"spans"`         // default [otlp_spans]
	SpanEncoding string   `yaml:"span_encoding"` // otlp_proto, otlp_json or auto (default)
	Corrections  []string `yaml:"corrections"`   // default [fusebox.corrections]
	// Logs are OTLP log topics read for evaluation events, only when
	// evaluations has rules; they take span_encoding. Default [otlp_logs].
	Logs []string `yaml:"logs"`
	// Keyed is the topic the router writes and the keyed stage reads.
	// Default "<kafka.group>.keyed".
	Keyed string `yaml:"keyed"`
	// KeyedPartitions is the keyed topic's partition count when fusebox
	// creates it; it bounds how many processes share the work. Default 12.
	KeyedPartitions int32 `yaml:"keyed_partitions"`
	// State is the compacted checkpoint topic. Default "<kafka.group>.state".
	State string `yaml:"state"`
	// Summaries carries the workers' evaluation summaries to the incident
	// stage (only with incidents.enabled), keyed by SLO, with
	// keyed_partitions partitions. Default "<kafka.group>.summaries".
	Summaries string `yaml:"summaries"`
	// Incidents receives the incident stage's records (only with
	// incidents.enabled and the Kafka sink). Default fusebox.incidents.
	Incidents string `yaml:"incidents"`
	Verdicts  string `yaml:"verdicts"` // default fusebox.verdicts
	Fuse      string `yaml:"fuse"`     // default fusebox.fuse
	DLQ       string `yaml:"dlq"`      // default fusebox.dlq
	// ReplicationFactor is the replication factor of the topics fusebox
	// creates (keyed, state, verdicts, fuse, DLQ, and source topics it
	// finds missing); -1, the default, leaves it to the broker's
	// default.replication.factor. Existing topics with fewer replicas are
	// logged (WARN) at start, naming the topic and the setting: fusebox
	// does not change a topic it did not create.
	ReplicationFactor int16 `yaml:"replication_factor"`
	// MinInsyncReplicas is min.insync.replicas of the topics fusebox
	// creates: how many replicas must have a write before it is
	// acknowledged (fusebox's producers ask for acks=all). 0, the default,
	// leaves it to the broker's min.insync.replicas. Existing topics with a
	// lower one are logged (WARN) at start, as for ReplicationFactor.
	MinInsyncReplicas int `yaml:"min_insync_replicas"`
}

// Keys says what statistics are kept per, and how many.
type Keys struct {
	// Dimensions key the statistics: any of tenant, service, model,
	// variant. Default all four.
	Dimensions []string `yaml:"dimensions"`
	// Per partition worker: the most distinct values of each dimension
	// kept; more fold into "__overflow__". Defaults 1000, 1000, 200, 20.
	MaxTenants  int `yaml:"max_tenants"`
	MaxServices int `yaml:"max_services"`
	MaxModels   int `yaml:"max_models"`
	MaxVariants int `yaml:"max_variants"`
	// MaxKeys bounds the live keys (combinations of the dimensions' values)
	// per keyed partition: the per-dimension limits alone allow their
	// product. New keys beyond it fold into the overflow key
	// (__overflow__ in every dimension); known keys keep their state and
	// verdicts. Default 2000 (docs/architecture.md, "Bounded memory", gives
	// the memory it bounds).
	MaxKeys int `yaml:"max_keys"`
	// IdleTTL forgets a value unseen for this long (event time). Default 24h.
	IdleTTL time.Duration `yaml:"idle_ttl"`
}

// Time configures event time.
type Time struct {
	// AllowedLateness is how far behind the newest earlier record of its
	// own source partition a record may be and still count. Default 30s.
	AllowedLateness time.Duration `yaml:"allowed_lateness"`
	// IdleSourceTimeout (wall time) marks a silent source partition idle so
	// it stops holding the watermark. Default 10s.
	IdleSourceTimeout time.Duration `yaml:"idle_source_timeout"`
	// MaxFutureSkew is how far a span's end or a correction's time may be
	// ahead of its Kafka record's timestamp; further ahead it goes to the
	// DLQ as future_event_time instead of moving the watermark (a client
	// clock a day fast, an end time in year 2262). Default 5m.
	MaxFutureSkew time.Duration `yaml:"max_future_skew"`
	// WatermarkStallEvaluations: a keyed partition whose watermark has not
	// moved for this many of its (shortest) evaluation intervals of wall
	// time while records keep arriving is logged (WARN) and makes /readyz
	// not ready, with the reason. Default 10.
	WatermarkStallEvaluations int `yaml:"watermark_stall_evaluations"`
	// CheckpointEvery (wall time): how often each partition makes its
	// output durable, saves its state and commits. Default 10s.
	CheckpointEvery time.Duration `yaml:"checkpoint_every"`
	// CheckpointRecords also checkpoints a keyed partition once this many
	// of its records are unacknowledged. The keyed consumer holds at most
	// 4x this many unacknowledged records (and at most
	// MaxUnackedBytes) per partition before it pauses fetching: this is
	// the knob that bounds the memory a busy partition takes between
	// checkpoints. Default 100000.
	CheckpointRecords int `yaml:"checkpoint_records"`
	// MaxUnackedBytes bounds the keyed record bytes a partition holds
	// unacknowledged; fetching pauses above it. Default 1 GiB.
	MaxUnackedBytes int64 `yaml:"max_unacked_bytes"`
}

// SLO is one entry of slos: a name, an optional match, and exactly one
// processor section, keyed by a kind of processors/registry (`tail:`,
// `drift:`, ...).
type SLO struct {
	Name string `yaml:"name"`
	// Match restricts the SLO to some keys; empty lists match every value.
	Match schemas.Match `yaml:"match"`

	// Sections are the entry's processor sections in the order of the
	// Loader's kinds (registry.Kinds for Load), each decoded over its
	// kind's defaults. Load accepts only entries with exactly one; use
	// Processor.
	Sections []Section `yaml:"-"`

	node *yaml.Node // the entry, until its sections are decoded
}

// Section is one processor section of an SLO entry.
type Section struct {
	Kind   processors.Kind
	Config processors.Config // the kind's *Config, e.g. *tail.Config
}

// Processor returns the entry's one processor section; ok is false when
// the entry has none or several (which Load reports).
func (s *SLO) Processor() (sec Section, ok bool) {
	if len(s.Sections) != 1 {
		return Section{}, false
	}
	return s.Sections[0], true
}

// Effect is the `effect:` section: processors/effect's Config (one for
// every SLO: the evaluations are counted in each signal's own SLO
// interval).
type Effect = effect.Config

// Rollups configures the per-minute span rollups written to ClickHouse.
type Rollups struct {
	Enabled bool `yaml:"enabled"` // default true
	// MaxSamplesPerMinute caps the latencies kept per key per minute for
	// the quantile states. Default 2000.
	MaxSamplesPerMinute int `yaml:"max_samples_per_minute"`
}

// Signing configures the HMAC keys of fuse commands.
type Signing struct {
	// KeysFile holds "id:secret" lines (see package fuse); KeysEnv names an
	// environment variable with "id:secret,id:secret". Default env
	// FUSEBOX_FUSE_KEYS.
	KeysFile string `yaml:"keys_file"`
	KeysEnv  string `yaml:"keys_env"`
	// ActiveKey is the id of the key that signs; default the last listed.
	ActiveKey string `yaml:"active_key"`
	// InsecureUnsigned sends unsigned commands; fusebox refuses to start
	// without a key otherwise. Same as --insecure-unsigned.
	InsecureUnsigned bool `yaml:"insecure_unsigned"`
	// ExpiryWarning: fusebox (and `config check`) warns once the active
	// key's not-after is this close (wall time); it refuses to start with
	// an active key past its not-after. Default 168h (7 days).
	ExpiryWarning time.Duration `yaml:"expiry_warning"`
}

// Sinks configures where verdicts, commands and rollups go.
type Sinks struct {
	// Kafka writes verdicts and fuse commands to their topics. Default on.
	Kafka KafkaSink `yaml:"kafka"`
	// ClickHouse is off unless Addr is set.
	ClickHouse ClickHouse `yaml:"clickhouse"`
	// JSONL appends verdicts and commands to a file when Path is set.
	JSONL JSONL `yaml:"jsonl"`
}

// KafkaSink configures the Kafka sink.
type KafkaSink struct {
	Enabled bool `yaml:"enabled"`
	// Partitions of the verdict and fuse topics when fusebox creates them.
	// Default 6.
	Partitions int32 `yaml:"partitions"`
}

// ClickHouse configures the ClickHouse sink.
type ClickHouse struct {
	Addr        []string      `yaml:"addr"`
	Database    string        `yaml:"database"` // default fusebox
	Username    string        `yaml:"username"` // default default
	Password    string        `yaml:"password"`
	PasswordEnv string        `yaml:"password_env"`
	TLS         TLS           `yaml:"tls"`
	BatchRows   int           `yaml:"batch_rows"`   // default 5000
	FlushEvery  time.Duration `yaml:"flush_every"`  // default 1s
	BufferRows  int           `yaml:"buffer_rows"`  // default 100000
	Migrate     bool          `yaml:"migrate"`      // apply migrations at start; default true
	DialTimeout time.Duration `yaml:"dial_timeout"` // default 5s
}

// JSONL configures the JSON-lines file sink.
type JSONL struct {
	Path string `yaml:"path"`
}

// HTTP configures the observability endpoints.
type HTTP struct {
	// Listen serves /metrics, /healthz and /readyz. Default
	// 127.0.0.1:9464; "" turns the server off.
	Listen string `yaml:"listen"`
	// Pprof also serves /debug/pprof/. Default false.
	Pprof bool `yaml:"pprof"`
	// UI also serves the live page on /ui/ and its JSON API on /api/ui/
	// (package internal/ui): recent verdicts and fuse commands per key,
	// kept in memory within fixed bounds. Default false (the demo turns it
	// on). Needs Listen.
	UI bool `yaml:"ui"`
}

// Log configures the structured logs (on stderr).
type Log struct {
	Level string `yaml:"level"` // debug, info (default), warn, error
	// Format is json (default: one JSON object per line) or text
	// (key=value lines, for a human at a terminal).
	Format string `yaml:"format"`
	// RejectionsEvery: the first rejected record of each kind on each
	// source partition is logged at once; then, while they continue, one
	// line with their count per this interval. Default 1m.
	RejectionsEvery time.Duration `yaml:"rejections_every"`
}

// Default returns every default; Load decodes the file on top of it.
func Default() File {
	g := schemas.DefaultLimits()
	return File{
		Kafka: Kafka{Brokers: []string{"127.0.0.1:9092"}, Group: "fusebox", ClientID: "fusebox", LeaveOnShutdown: true},
		Topics: Topics{
			Spans: []string{"otlp_spans"}, SpanEncoding: "auto", Corrections: []string{"fusebox.corrections"}, Logs: []string{"otlp_logs"},
			Keyed: "fusebox.keyed", KeyedPartitions: 12, State: "fusebox.state", Summaries: "fusebox.summaries", Incidents: "fusebox.incidents",
			Verdicts: "fusebox.verdicts", Fuse: "fusebox.fuse", DLQ: "fusebox.dlq", ReplicationFactor: -1,
		},
		Attributes: schemas.DefaultAttributeNames(),
		Limits:     g,
		Answers:    schemas.DefaultAnswers(),
		Keys: Keys{
			Dimensions: []string{"tenant", "service", "model", "variant"},
			MaxTenants: 1000, MaxServices: 1000, MaxModels: 200, MaxVariants: 20, MaxKeys: 2000, IdleTTL: 24 * time.Hour,
		},
		Time: Time{AllowedLateness: 30 * time.Second, IdleSourceTimeout: 10 * time.Second, MaxFutureSkew: 5 * time.Minute, WatermarkStallEvaluations: 10, CheckpointEvery: 10 * time.Second,
			CheckpointRecords: 100_000, MaxUnackedBytes: 1 << 30},
		Rollups: Rollups{Enabled: true, MaxSamplesPerMinute: 2000},
		Breaker: DefaultBreaker(),
		Effect:  effect.DefaultConfig(),
		Signing: Signing{KeysEnv: "FUSEBOX_FUSE_KEYS", ExpiryWarning: 7 * 24 * time.Hour},
		Sinks: Sinks{
			Kafka: KafkaSink{Enabled: true, Partitions: 6},
			ClickHouse: ClickHouse{Database: "fusebox", Username: "default", BatchRows: 5000, FlushEvery: time.Second,
				BufferRows: 100000, Migrate: true, DialTimeout: 5 * time.Second},
		},
		HTTP:   HTTP{Listen: "127.0.0.1:9464"},
		Log:    Log{Level: "info", Format: "json", RejectionsEvery: time.Minute},
		Compat: Compat{WriteFormats: WriteFormatsCurrent},
	}
}
