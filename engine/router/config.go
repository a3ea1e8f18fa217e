package router

import (
	"errors"
	"strconv"
)

// DefaultConfig returns the defaults listed on Config (SourceTopics, which
// has none, still to be set). New fills the zero fields of its Config from
// the same defaults.
func DefaultConfig() Config {
	var c Config
	c.defaults()
	return c
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
	return errors.Join(errs...)
}
