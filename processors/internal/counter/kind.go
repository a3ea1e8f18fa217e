package counter

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`counter:`) and the
// Processor of every verdict this package emits.
const Name = "counter"

// Kind is the counter kind: what registry.With takes.
func Kind() processors.Kind { return processors.NewKind(Name, DefaultConfig, DefaultConfig, New) }

// Interval is Every: the counts' period.
func (c *Config) Interval() time.Duration { return c.Every }

// Metrics is the one verdict metric, MetricCalls.
func (*Config) Metrics() []string { return []string{MetricCalls} }

// Summary names the limit and the period.
func (c *Config) Summary() string {
	return fmt.Sprintf("counter: calls per key, breach above %d per %v", c.Limit, c.Every)
}

// StateShape: the interval is the counts' period; the limit only judges.
func (c *Config) StateShape() any { return []any{c.Every} }
