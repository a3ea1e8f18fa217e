package scaling

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`scaling:`) and
// the Processor of every verdict this package emits.
const Name = "scaling"

// Kind is the scaling kind, for processors/registry: Config decoded over
// DefaultConfig, built by New, one verdict metric (MetricScaling).
func Kind() processors.Kind {
	return processors.NewKind(Name, processors.KindFuncs[Config, *Processor]{
		Default: DefaultConfig,
		Sample:  func() Config { c := DefaultConfig(); c.StdDevBudgetMs = 100; return c },
		New:     New,
		Every:   func(c *Config) time.Duration { return c.Every },
		Metrics: func(*Config) []string { return []string{MetricScaling} },
		Summary: func(c *Config) string {
			return fmt.Sprintf("scaling per [%s]: entropy of [%s] >= %g with latency sd > %gms scales out; window %v every %v",
				strings.Join(c.Scope, " "), strings.Join(c.Mix, " "), c.EntropyHigh, c.StdDevBudgetMs, c.Window, c.Every)
		},
		StateShape: stateShape,
		CheckDimensions: func(c *Config, dims []string) error {
			// A scope without the tenant would mix the state of several
			// keyed partitions' workers.
			if slices.Contains(dims, "tenant") && !slices.Contains(c.Scope, "tenant") {
				return &processors.ConfigError{Field: "scope", Reason: "must include tenant: fusebox shards its state by tenant"}
			}
			return nil
		},
	})
}

// stateShape: the scope, the mix, the window, the interval and the caps
// shape the windows; the entropy bounds, the budget, the scale-in delay
// and the minimum count only judge them.
func stateShape(c *Config) any {
	return []any{c.Scope, c.Mix, c.Window, c.Every, c.MaxSamplesPerSlot, c.MaxCategories}
}
