package corrections

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`corrections:`)
// and the Processor of every verdict this package emits.
const Name = "corrections"

// Kind is the corrections kind, for processors/registry: its defaults are
// a valid sample.
func Kind() processors.Kind { return processors.NewKind(Name, DefaultConfig, DefaultConfig, New) }

// Interval is Every: the rates are judged once per interval.
func (c *Config) Interval() time.Duration { return c.Every }

// Metrics are the same three whatever the configuration: the rate of
// every key (MetricRate), the canary comparison where a canary and its
// baseline have traffic (MetricCanary), the unjoined count where
// corrections found no span (MetricUnjoined).
func (*Config) Metrics() []string { return []string{MetricRate, MetricCanary, MetricUnjoined} }

// Summary names the maximum rate, the window, the interval, the join
// window and the canary test's alpha.
func (c *Config) Summary() string {
	return fmt.Sprintf("corrections: rate <= %g (Wilson lower bound) over %v every %v, joined within %v; canary vs baseline at alpha %g",
		c.MaxRate, c.Window, c.Every, c.JoinWindow, c.Alpha)
}

// StateShape: the join window, the window, the interval, the variants and
// the caps shape what is held; the maximum rate, alpha, the minimum effect
// and count only judge it.
func (c *Config) StateShape() any {
	return []any{c.JoinWindow, c.Window, c.Every, c.CanaryVariant, c.BaselineVariant,
		c.MaxIndexedSpans, c.MaxPendingCorrections, c.MaxUnjoinedKeys}
}
