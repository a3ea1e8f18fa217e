package tail

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`tail:`) and the
// Processor of every verdict this package emits.
const Name = "tail"

// Kind is the tail kind, for processors/registry.
func Kind() processors.Kind { return processors.NewKind(Name, DefaultConfig, sampleConfig, New) }

// Interval is Every: the tail is estimated anew once per interval.
func (c *Config) Interval() time.Duration { return c.Every }

// Metrics is the one verdict metric, named for p and the metric
// (MetricName).
func (c *Config) Metrics() []string { return []string{MetricName(*c)} }

// Summary names the quantile, the budget, the window and the interval.
func (c *Config) Summary() string {
	level := strconv.FormatFloat(math.Round(c.Level*1e12)/1e10, 'f', -1, 64) // percent, without float noise
	return fmt.Sprintf("tail %s budget %g (breach when the %s%% interval's lower bound exceeds it, unless one call explains it) over %v every %v",
		MetricName(*c), c.Budget, level, c.Window, c.Every)
}

// StateShape: the metric, whether failed calls count, the window, the
// interval (the slot width) and the sample cap shape the windows; p, the
// budget, the threshold quantile and the minimum counts only judge them.
func (c *Config) StateShape() any {
	return []any{c.Metric, c.IncludeErrors, c.Window, c.Every, c.MaxSamplesPerSlot}
}
