package drift

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`drift:`) and the
// Processor of every verdict this package emits.
const Name = "drift"

// Kind is the drift kind, for processors/registry: Config decoded over
// DefaultConfig, built by New, one verdict metric (MetricName).
func Kind() processors.Kind {
	return processors.NewKind(Name, processors.KindFuncs[Config, *Processor]{
		Default: DefaultConfig,
		Sample:  DefaultConfig,
		New:     New,
		Every:   func(c *Config) time.Duration { return c.Every },
		Metrics: func(c *Config) []string { return []string{MetricName(*c)} },
		Summary: func(c *Config) string {
			against := "the previous " + c.ReferenceWindow.String()
			if c.Mode == ModeCanary {
				against = "variant " + c.BaselineVariant + " (canary " + c.CanaryVariant + ")"
			}
			return fmt.Sprintf("drift %s: KS p < %g and D >= %g, %d in a row, %v window against %s, every %v",
				MetricName(*c), c.Alpha, c.MinEffect, c.Consecutive, c.Window, against, c.Every)
		},
		StateShape: stateShape,
	})
}

// stateShape: the metric, whether failed calls count, the mode, the
// windows, the interval, the variants and the sample cap shape the
// windows; alpha, the streak length, the minimum effect and counts only
// judge them.
func stateShape(c *Config) any {
	return []any{c.Metric, c.IncludeErrors, c.Mode, c.Window, c.Every, c.ReferenceWindow, c.CanaryVariant, c.BaselineVariant, c.MaxSamplesPerSlot}
}
