package router

import (
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Config configures a Router. Start from DefaultConfig; New also fills
// zero fields with the defaults.
type Config struct {
	// KeyedTopic is the topic written. Default "fusebox.keyed".
	KeyedTopic string
	// SourceTopics are every topic the ingest consumer reads; their
	// partition counts are announced to the keyed stage. Required.
	SourceTopics []string
	// ByTenant partitions by tenant; when false (the SLO file does not key
	// by tenant) everything goes to partition 0.
	ByTenant bool
	// HeartbeatEvery is how much a source partition's event time must
	// advance before a keyed partition that got no data from it hears of
	// it. Default 1s (event time).
	HeartbeatEvery time.Duration
	// IdleTimeout is how long (wall time) a source partition may go without
	// a valid event (an LLM span or correction that passed decoding and
	// validation) before it is marked idle, so that it stops holding the
	// watermark back — whatever rejected records keep arriving. Default 10s.
	IdleTimeout time.Duration
	// MaxRecordBytes splits a keyed record larger than this into parts.
	// Default 900 KiB, below Kafka's default 1 MiB message limit.
	MaxRecordBytes int
	// Deployment, when set, goes in every keyed record's
	// schemas.HeaderDeployment header: a keyed stage of another deployment
	// that reads the same keyed topic skips the record.
	Deployment string
	// KeyedBatchVersion is the keyed-batch format written: 0 for the
	// current one, schemas.KeyedBatchVersion2 during the first step of a
	// rolling upgrade (config compat.write_formats: previous), for pods of
	// the build before that still read the keyed topic.
	KeyedBatchVersion byte
	// Logger gets the router's logs. Default: discard.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults listed on Config.
func DefaultConfig() Config {
	return Config{
		KeyedTopic:     "fusebox.keyed",
		HeartbeatEvery: time.Second,
		IdleTimeout:    10 * time.Second,
		MaxRecordBytes: 900 << 10,
		Logger:         slog.New(slog.DiscardHandler),
	}
}

// defaults fills the zero fields from DefaultConfig.
func (c *Config) defaults() {
	d := DefaultConfig()
	if c.KeyedTopic == "" {
		c.KeyedTopic = d.KeyedTopic
	}
	if c.HeartbeatEvery == 0 {
		c.HeartbeatEvery = d.HeartbeatEvery
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = d.MaxRecordBytes
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
}

// ConfigError names the Config field that is wrong.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "router: config " + e.Field + ": " + e.Reason }

// Validate reports every invalid field (errors.Join of *ConfigError).
func (c *Config) Validate() error {
	var errs []error
	bad := func(cond bool, field, reason string) {
		if cond {
			errs = append(errs, &ConfigError{Field: field, Reason: reason})
		}
	}
	bad(c.KeyedTopic == "", "KeyedTopic", "must not be empty")
	bad(len(c.SourceTopics) == 0, "SourceTopics", "no source topics")
	for i, t := range c.SourceTopics {
		bad(t == "", "SourceTopics["+strconv.Itoa(i)+"]", "must not be empty")
		bad(t == c.KeyedTopic, "SourceTopics["+strconv.Itoa(i)+"]", "is the keyed topic")
	}
	bad(c.HeartbeatEvery <= 0, "HeartbeatEvery", "must be positive, got "+c.HeartbeatEvery.String())
	bad(c.IdleTimeout <= 0, "IdleTimeout", "must be positive, got "+c.IdleTimeout.String())
	bad(c.MaxRecordBytes < 1024, "MaxRecordBytes", "must be at least 1024, got "+strconv.Itoa(c.MaxRecordBytes))
	bad(c.KeyedBatchVersion != 0 && c.KeyedBatchVersion != schemas.KeyedBatchVersion2 && c.KeyedBatchVersion != schemas.KeyedBatchVersion,
		"KeyedBatchVersion", "must be 0, 2 or 3, got "+strconv.Itoa(int(c.KeyedBatchVersion)))
	return errors.Join(errs...)
}
