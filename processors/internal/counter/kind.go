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
func Kind() processors.Kind {
	return processors.NewKind(Name, processors.KindFuncs[Config, *Processor]{
		Default: DefaultConfig,
		Sample:  DefaultConfig,
		New:     New,
		Every:   func(c *Config) time.Duration { return c.Every },
		Metrics: func(*Config) []string { return []string{MetricCalls} },
		Summary: func(c *Config) string {
			return fmt.Sprintf("counter: calls per key, breach above %d per %v", c.Limit, c.Every)
		},
		// The interval is the counts' period; the limit only judges.
		StateShape: func(c *Config) any { return []any{c.Every} },
	})
}
