package scaling

import (
	"fmt"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`scaling:`) and
// the Processor of every verdict this package emits.
const Name = "scaling"

// Kind is the scaling kind, for processors/registry. Its Config is a
// processors.DimensionChecker (CheckDimensions, in config.go).
func Kind() processors.Kind { return processors.NewKind(Name, DefaultConfig, sampleConfig, New) }

// Interval is Every: the mix and the variance are judged once per
// interval.
func (c *Config) Interval() time.Duration { return c.Every }

// Metrics is the one verdict metric, MetricScaling, whatever the
// configuration.
func (*Config) Metrics() []string { return []string{MetricScaling} }

// Summary names the scope, the mix, the high-entropy bound, the latency
// budget, the window and the interval.
func (c *Config) Summary() string {
	return fmt.Sprintf("scaling per [%s]: entropy of [%s] >= %g with latency sd > %gms scales out; window %v every %v",
		strings.Join(c.Scope, " "), strings.Join(c.Mix, " "), c.EntropyHigh, c.StdDevBudgetMs, c.Window, c.Every)
}

// StateShape: the scope, the mix, the window, the interval and the
// category cap shape the windows; the entropy bounds, the budget, the
// scale-in delay and the minimum count only judge them. MaxSamplesPerSlot
// (deprecated, ignored) shapes nothing now but stays in: taking it out
// would change every scaling SLO's state id, and a checkpoint's state is
// restored only under its own id.
func (c *Config) StateShape() any {
	return []any{c.Scope, c.Mix, c.Window, c.Every, c.MaxSamplesPerSlot, c.MaxCategories}
}
