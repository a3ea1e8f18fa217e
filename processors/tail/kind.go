package tail

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`tail:`) and the
// Processor of every verdict this package emits.
const Name = "tail"

// Kind is the tail kind, for processors/registry: Config decoded over
// DefaultConfig, built by New, one verdict metric (MetricName).
func Kind() processors.Kind {
	return processors.NewKind(Name, processors.KindFuncs[Config, *Processor]{
		Default: DefaultConfig,
		Sample:  func() Config { c := DefaultConfig(); c.Budget = 3000; return c },
		New:     New,
		Every:   func(c *Config) time.Duration { return c.Every },
		Metrics: func(c *Config) []string { return []string{MetricName(*c)} },
		Summary: func(c *Config) string {
			return fmt.Sprintf("tail %s budget %g (breach when the 95%% interval's lower bound exceeds it) over %v every %v",
				MetricName(*c), c.Budget, c.Window, c.Every)
		},
		StateShape: stateShape,
	})
}

// stateShape: the metric, whether failed calls count, the window, the
// interval (the slot width) and the sample cap shape the windows; p, the
// budget, the threshold quantile and the minimum counts only judge them.
func stateShape(c *Config) any {
	return []any{c.Metric, c.IncludeErrors, c.Window, c.Every, c.MaxSamplesPerSlot}
}
