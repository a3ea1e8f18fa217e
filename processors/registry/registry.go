// Package registry is the one list of the processor kinds an SLO entry can
// name: tail, drift, decay, scaling, corrections and burnrate. Each Kind
// says its name (the SLO file's section key and every verdict's
// Processor), its default configuration, how to build a processor from a
// configuration, and which verdict metrics that processor emits.
//
// Everything that depends on the set of kinds loops over Kinds: decoding
// and validating the SLO file (internal/config), building the partition
// workers (pipeline), `fusebox config check`, the benchmarks' incident
// tooling and, through Metrics, the breaker's rule validation. Adding a
// processor means one package and one line in Kinds.
//
// The list is explicit (no init() registration) so that the order, which
// is the order of the SLO file's sections in error messages and of the
// configuration hash, is fixed by this file alone.
//
// The rollup processor (per-minute span rollups, no verdicts) and the
// breaker (verdicts in, fuse commands out) are not SLO kinds: the SLO file
// configures them in sections of their own.
package registry

import (
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
)

// Config is one processor section, decoded: a pointer to the kind's own
// Config struct (*tail.Config for tail, and so on). Validate reports every
// wrong field as a *processors.ConfigError relative to the section.
type Config interface {
	Validate() error
}

// Kind is one processor kind. Every function takes the Config of this
// kind (as returned by Default, possibly decoded over); given another
// kind's, it panics.
type Kind struct {
	// Name is the SLO file's section key (`tail:`) and the Processor of
	// every verdict this kind emits.
	Name string
	// Default returns a new Config holding the kind's defaults, into which
	// the SLO file's section is decoded.
	Default func() Config
	// New builds one processor for meta's SLO; it fails when the
	// configuration is invalid.
	New func(meta processors.Meta, cfg Config) (processors.Processor, error)
	// Every is the configuration's evaluation interval (event time).
	Every func(cfg Config) time.Duration
	// Metrics lists the verdict metrics (schemas.Verdict.Metric) a
	// processor built from cfg can emit, sorted: what a breaker rule's
	// `metric` may name for an SLO of this kind.
	Metrics func(cfg Config) []string
	// Summary says in one line what an SLO of this configuration checks
	// (`fusebox config check`).
	Summary func(cfg Config) string
	// StateShape returns the parameters of cfg that shape what the
	// processor's windows hold (state.go): a checkpoint's state of an SLO
	// is restored only when its shape is unchanged.
	StateShape func(cfg Config) any
}

// Kinds returns every kind, in a fixed order (the order of the SLO
// entry's sections). The slice is new on every call.
func Kinds() []Kind {
	return []Kind{
		kind(tail.ProcessorName, tail.DefaultConfig, tail.New, func(c *tail.Config) time.Duration { return c.Every }, tailMetrics, tailSummary),
		kind(drift.ProcessorName, drift.DefaultConfig, drift.New, func(c *drift.Config) time.Duration { return c.Every }, driftMetrics, driftSummary),
		kind(decay.Name, decay.DefaultConfig, decay.New, func(c *decay.Config) time.Duration { return c.Every }, decayMetrics, decaySummary),
		kind(scaling.Name, scaling.DefaultConfig, scaling.New, func(c *scaling.Config) time.Duration { return c.Every }, scalingMetrics, scalingSummary),
		kind(corrections.Name, corrections.DefaultConfig, corrections.New, func(c *corrections.Config) time.Duration { return c.Every }, correctionsMetrics, correctionsSummary),
		kind(burnrate.ProcessorName, burnrate.DefaultConfig, burnrate.New, func(c *burnrate.Config) time.Duration { return c.Every }, burnrateMetrics, burnrateSummary),
	}
}

// Lookup returns the kind called name.
func Lookup(name string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Names returns every kind's name, in the order of Kinds.
func Names() []string {
	ks := Kinds()
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Name
	}
	return out
}

// Of returns the kind whose Default makes configurations of cfg's type.
func Of(cfg Config) (Kind, bool) {
	for _, k := range Kinds() {
		if sameType(k.Default(), cfg) {
			return k, true
		}
	}
	return Kind{}, false
}

// kind adapts one processor package's typed functions to a Kind. C is the
// package's Config, P its processor type.
func kind[C any, P processors.Processor, PC interface {
	*C
	Config
}](name string, def func() C, newp func(processors.Meta, C) (P, error),
	every func(*C) time.Duration, metrics func(*C) []string, summary func(*C) string) Kind {
	return Kind{
		Name:    name,
		Default: func() Config { c := def(); return PC(&c) },
		New: func(meta processors.Meta, cfg Config) (processors.Processor, error) {
			p, err := newp(meta, *cfg.(PC))
			if err != nil {
				return nil, err
			}
			return p, nil
		},
		Every: func(cfg Config) time.Duration { return every(cfg.(PC)) },
		Metrics: func(cfg Config) []string {
			m := metrics(cfg.(PC))
			slices.Sort(m)
			return m
		},
		Summary:    func(cfg Config) string { return summary(cfg.(PC)) },
		StateShape: windowShape,
	}
}
