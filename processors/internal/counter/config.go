package counter

import (
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Config is the `counter:` section of an SLO entry.
type Config struct {
	// Every is the evaluation interval. Default 1m.
	Every time.Duration `yaml:"every"`
	// Limit is the most calls a key may make in one interval before its
	// verdict breaches. Default 1000.
	Limit int64 `yaml:"limit"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{Every: time.Minute, Limit: 1000} }

// Validate reports every wrong field as a *processors.ConfigError.
func (c *Config) Validate() error {
	var k processors.Check
	k.Fail(c.Every <= 0, "every", "must be a positive duration")
	k.Fail(c.Limit < 0, "limit", "must not be negative")
	return k.Err()
}
