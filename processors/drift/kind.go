package drift

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`drift:`) and the
// Processor of every verdict this package emits.
const Name = "drift"

// Kind is the drift kind, for processors/registry: its defaults are a
// valid sample.
func Kind() processors.Kind { return processors.NewKind(Name, DefaultConfig, DefaultConfig, New) }

// Interval is Every: the two samples are compared once per interval.
func (c *Config) Interval() time.Duration { return c.Every }

// Metrics is the one verdict metric, named for the metric (MetricName),
// in either mode.
func (c *Config) Metrics() []string { return []string{MetricName(*c)} }

// Summary names the metric, the thresholds, the streak, the window and
// what it is compared against (the reference window, or the baseline
// variant in canary mode).
func (c *Config) Summary() string {
	against := "the previous " + c.ReferenceWindow.String()
	if c.Mode == ModeCanary {
		against = "variant " + c.BaselineVariant + " (canary " + c.CanaryVariant + ")"
	}
	return fmt.Sprintf("drift %s: KS p < %g and D >= %g, %d in a row, %v window against %s, every %v",
		MetricName(*c), c.Alpha, c.MinEffect, c.Consecutive, c.Window, against, c.Every)
}

// StateShape: the metric, whether failed calls count, the mode, the
// windows, the interval, the variants and the sample cap shape the
// windows; alpha, the streak length, the minimum effect and counts only
// judge them.
func (c *Config) StateShape() any {
	return []any{c.Metric, c.IncludeErrors, c.Mode, c.Window, c.Every, c.ReferenceWindow, c.CanaryVariant, c.BaselineVariant, c.MaxSamplesPerSlot}
}
