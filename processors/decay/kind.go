package decay

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`decay:`) and the
// Processor of every verdict this package emits.
const Name = "decay"

// Kind is the decay kind, for processors/registry: Config decoded over
// DefaultConfig, built by New, one verdict metric (MetricName).
func Kind() processors.Kind {
	return processors.NewKind(Name, processors.KindFuncs[Config, *Processor]{
		Default: DefaultConfig,
		Sample:  DefaultConfig,
		New:     New,
		Every:   func(c *Config) time.Duration { return c.Every },
		Metrics: func(c *Config) []string { return []string{MetricName(*c)} },
		Summary: func(c *Config) string {
			return fmt.Sprintf("decay of %s: decline over %v below %g (OLS slope, alpha %g) every %v", c.Metric, c.Window, c.Limit, c.Alpha, c.Every)
		},
		StateShape: stateShape,
	})
}

// stateShape: the metric, the window, the interval and the sample cap
// shape the windows; the limit, alpha and the minimum counts only judge
// them.
func stateShape(c *Config) any {
	return []any{c.Metric, c.Window, c.Every, c.MaxSamplesPerSlot}
}
