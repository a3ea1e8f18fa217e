package engine

import (
	"errors"
	"log/slog"
	"strconv"
	"time"
)

// DefaultKeyedConfig returns the defaults listed on KeyedConfig; the
// worker configuration, the state store and the sinks are still to be set.
func DefaultKeyedConfig() KeyedConfig {
	return KeyedConfig{
		CheckpointEvery:   10 * time.Second,
		CheckpointRecords: 100_000,
		Logger:            slog.New(slog.DiscardHandler),
	}
}

// defaults fills the zero (or, for the checkpoint triggers, non-positive)
// fields from DefaultKeyedConfig.
func (c *KeyedConfig) defaults() {
	d := DefaultKeyedConfig()
	if c.CheckpointEvery <= 0 {
		c.CheckpointEvery = d.CheckpointEvery
	}
	if c.CheckpointRecords <= 0 {
		c.CheckpointRecords = d.CheckpointRecords
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
}

// ConfigError names the field of a KeyedConfig that is wrong.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "engine: config " + e.Field + ": " + e.Reason }

// Validate reports every invalid field (errors.Join of *ConfigError).
func (c *KeyedConfig) Validate() error {
	var errs []error
	bad := func(cond bool, field, reason string) {
		if cond {
			errs = append(errs, &ConfigError{Field: field, Reason: reason})
		}
	}
	bad(c.Store == nil, "Store", "the keyed stage needs a state store")
	bad(len(c.Sinks) == 0, "Sinks", "the keyed stage needs at least one sink")
	for i, s := range c.Sinks {
		bad(s == nil, "Sinks["+strconv.Itoa(i)+"]", "is nil")
	}
	bad(c.CheckpointEvery <= 0, "CheckpointEvery", "must be positive, got "+c.CheckpointEvery.String())
	bad(c.CheckpointRecords <= 0, "CheckpointRecords", "must be positive")
	bad(c.Worker.AllowedLateness < 0, "Worker.AllowedLateness", "must not be negative")
	return errors.Join(errs...)
}
