package corrections

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`corrections:`)
// and the Processor of every verdict this package emits.
const Name = "corrections"

// Kind is the corrections kind, for processors/registry: Config decoded
// over DefaultConfig, built by New. Its verdict metrics: the rate of
// every key (MetricRate), the canary comparison where a canary and its
// baseline have traffic (MetricCanary), the unjoined count where
// corrections found no span (MetricUnjoined).
func Kind() processors.Kind {
	return processors.NewKind(Name, processors.KindFuncs[Config, *Processor]{
		Default: DefaultConfig,
		Sample:  DefaultConfig,
		New:     New,
		Every:   func(c *Config) time.Duration { return c.Every },
		Metrics: func(*Config) []string { return []string{MetricRate, MetricCanary, MetricUnjoined} },
		Summary: func(c *Config) string {
			return fmt.Sprintf("corrections: rate <= %g (Wilson lower bound) over %v every %v, joined within %v; canary vs baseline at alpha %g",
				c.MaxRate, c.Window, c.Every, c.JoinWindow, c.Alpha)
		},
		StateShape: stateShape,
	})
}

// stateShape: the join window, the window, the interval, the variants and
// the caps shape what is held; the maximum rate, alpha, the minimum effect
// and count only judge it.
func stateShape(c *Config) any {
	return []any{c.JoinWindow, c.Window, c.Every, c.CanaryVariant, c.BaselineVariant,
		c.MaxIndexedSpans, c.MaxPendingCorrections, c.MaxUnjoinedKeys}
}
