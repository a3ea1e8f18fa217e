package decay

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`decay:`) and the
// Processor of every verdict this package emits.
const Name = "decay"

// Kind is the decay kind, for processors/registry: its defaults are a
// valid sample.
func Kind() processors.Kind { return processors.NewKind(Name, DefaultConfig, DefaultConfig, New) }

// Interval is Every: the trend is fitted anew once per interval.
func (c *Config) Interval() time.Duration { return c.Every }

// Metrics is the one verdict metric, the decline of the metric
// (MetricName).
func (c *Config) Metrics() []string { return []string{MetricName(*c)} }

// Summary names the metric, the window, the limit, alpha and the
// interval.
func (c *Config) Summary() string {
	return fmt.Sprintf("decay of %s: decline over %v below %g (OLS slope, alpha %g) every %v", c.Metric, c.Window, c.Limit, c.Alpha, c.Every)
}

// StateShape: the metric, the window, the interval and the sample cap
// shape the windows; the limit, alpha and the minimum counts only judge
// them.
func (c *Config) StateShape() any {
	return []any{c.Metric, c.Window, c.Every, c.MaxSamplesPerSlot}
}
