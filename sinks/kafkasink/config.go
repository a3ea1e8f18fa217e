package kafkasink

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Config; DefaultConfig returns them.
const (
	DefaultVerdictTopic      = "fusebox.verdicts"
	DefaultFuseTopic         = "fusebox.fuse"
	DefaultVerdictPartitions = 6
	DefaultFusePartitions    = 3
	DefaultMaxPendingRecords = 10000
	DefaultRetryBackoffMin   = 100 * time.Millisecond
	DefaultRetryBackoffMax   = 10 * time.Second
	DefaultAdminTimeout      = 30 * time.Second
)

// Config configures the Kafka sink. Zero fields are not filled in: start
// from DefaultConfig and change what you need.
type Config struct {
	// Brokers are the seed brokers, "host:port". Required.
	Brokers []string

	// VerdictTopic receives every verdict, keyed by "processor/key"
	// (default "fusebox.verdicts").
	VerdictTopic string
	// FuseTopic receives every fuse command, keyed by its target (default
	// "fusebox.fuse"). It must be compacted (cleanup.policy=compact):
	// gateways rebuild the newest command per target from it.
	FuseTopic string
	// IncidentTopic, when set, receives every incident record
	// (sinks.MarshalIncidentJSON, fusebox.incident.v1), keyed by its
	// incident id, acknowledged with the verdicts (before the commands
	// that cite them, and counted with them in Metrics); created like the
	// verdict topic. "" (the default): incident records are not written
	// to Kafka.
	IncidentTopic string

	// CreateTopics creates missing topics at New with the partitions,
	// replication and configs below (default true). Existing topics are left
	// as they are, but the fuse topic's cleanup.policy is checked.
	CreateTopics bool
	// VerdictPartitions and FusePartitions are the partition counts of newly
	// created topics (defaults 6 and 3).
	VerdictPartitions int32
	FusePartitions    int32
	// ReplicationFactor of newly created topics; -1 (the default) uses the
	// broker's default.replication.factor.
	ReplicationFactor int16
	// VerdictTopicConfigs and FuseTopicConfigs are extra topic configs for
	// created topics (e.g. "retention.ms"). cleanup.policy=compact is always
	// set on the fuse topic and may not be overridden.
	VerdictTopicConfigs map[string]string
	FuseTopicConfigs    map[string]string

	// MaxPendingRecords bounds the records written but not yet acknowledged
	// by the broker (verdicts and commands together, including those waiting
	// for a retry). Write blocks while it is reached (default 10000).
	MaxPendingRecords int

	// RetryBackoffMin and RetryBackoffMax bound the wait before producing a
	// record again after the client gave up on it (defaults 100ms and 10s).
	RetryBackoffMin time.Duration
	RetryBackoffMax time.Duration

	// AdminTimeout bounds topic creation and inspection at New (default 30s).
	AdminTimeout time.Duration
}

// DefaultConfig returns the defaults documented on Config, with no brokers.
func DefaultConfig() Config {
	return Config{
		VerdictTopic:      DefaultVerdictTopic,
		FuseTopic:         DefaultFuseTopic,
		CreateTopics:      true,
		VerdictPartitions: DefaultVerdictPartitions,
		FusePartitions:    DefaultFusePartitions,
		ReplicationFactor: -1,
		MaxPendingRecords: DefaultMaxPendingRecords,
		RetryBackoffMin:   DefaultRetryBackoffMin,
		RetryBackoffMax:   DefaultRetryBackoffMax,
		AdminTimeout:      DefaultAdminTimeout,
	}
}

// ConfigError names the Config field that is wrong.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "kafkasink: config " + e.Field + ": " + e.Reason }

// Validate reports every invalid field (errors.Join of *ConfigError).
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, reason string) { errs = append(errs, &ConfigError{Field: field, Reason: reason}) }
	if len(c.Brokers) == 0 {
		bad("brokers", "at least one seed broker is required")
	}
	for i, b := range c.Brokers {
		if b == "" {
			bad(fmt.Sprintf("brokers[%d]", i), "empty address")
		}
	}
	if c.VerdictTopic == "" {
		bad("verdict_topic", "empty")
	}
	if c.FuseTopic == "" {
		bad("fuse_topic", "empty")
	}
	if c.IncidentTopic != "" && (c.IncidentTopic == c.VerdictTopic || c.IncidentTopic == c.FuseTopic) {
		bad("incident_topic", "must differ from verdict_topic and fuse_topic")
	}
	if c.VerdictTopic != "" && c.VerdictTopic == c.FuseTopic {
		bad("fuse_topic", "must differ from verdict_topic "+c.VerdictTopic)
	}
	if c.CreateTopics {
		if c.VerdictPartitions < 1 {
			bad("verdict_partitions", fmt.Sprintf("%d: must be at least 1", c.VerdictPartitions))
		}
		if c.FusePartitions < 1 {
			bad("fuse_partitions", fmt.Sprintf("%d: must be at least 1", c.FusePartitions))
		}
		if c.ReplicationFactor == 0 || c.ReplicationFactor < -1 {
			bad("replication_factor", fmt.Sprintf("%d: must be -1 (broker default) or at least 1", c.ReplicationFactor))
		}
	}
	if p, ok := c.FuseTopicConfigs["cleanup.policy"]; ok && p != "compact" {
		bad("fuse_topic_configs[cleanup.policy]", fmt.Sprintf("%q: the fuse topic must be compacted", p))
	}
	if c.MaxPendingRecords < 1 {
		bad("max_pending_records", fmt.Sprintf("%d: must be at least 1", c.MaxPendingRecords))
	}
	if c.RetryBackoffMin <= 0 {
		bad("retry_backoff_min", "must be positive")
	}
	if c.RetryBackoffMax < c.RetryBackoffMin {
		bad("retry_backoff_max", fmt.Sprintf("%v: must be at least retry_backoff_min %v", c.RetryBackoffMax, c.RetryBackoffMin))
	}
	if c.AdminTimeout <= 0 {
		bad("admin_timeout", "must be positive")
	}
	return errors.Join(errs...)
}
