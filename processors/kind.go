package processors

import (
	"slices"
	"strconv"
	"time"
)

// Config is one SLO entry's processor section, decoded: a pointer to the
// kind's own Config struct (*tail.Config for tail, and so on). Validate
// reports every wrong field as a *ConfigError relative to the section.
type Config interface {
	Validate() error
}

// Kind is one SLO processor kind: everything the rest of fusebox needs to
// decode, check, describe, build and checkpoint an SLO of that kind. Each
// processor package exports its own (tail.Kind(), drift.Kind(), ...) from
// a file kind.go, built with NewKind; processors/registry lists them.
//
// Every function takes a Config of this kind (as returned by Default,
// possibly decoded over); given another kind's, it panics.
type Kind struct {
	// Name is the SLO file's section key (`tail:`), the Processor of every
	// verdict this kind emits and the processor a breaker rule names.
	Name string
	// Default returns a new Config holding the kind's defaults, into which
	// the SLO file's section is decoded (YAML, the fields' yaml tags).
	Default func() Config
	// Sample returns a new Config that validates: Default with every field
	// that has no default (a budget) set to a typical value. Tests and
	// examples build from it; the fields where Sample and Default differ
	// are the ones an SLO file must set.
	Sample func() Config
	// New builds one processor for meta's SLO; it fails when the
	// configuration is invalid.
	New func(meta Meta, cfg Config) (Processor, error)
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
	// processor's windows hold (the metric, window lengths, the interval,
	// caps, variants, ...), never nil. It goes into the SLO's state id: a
	// checkpoint's state of an SLO is restored only when its shape is
	// unchanged. Parameters that only judge what the windows hold
	// (budgets, p, alpha, limits, minimum counts) are left out, so editing
	// them keeps the state.
	StateShape func(cfg Config) any
	// CheckDimensions reports, as *ConfigError relative to the section,
	// what in cfg does not fit the SLO file's key dimensions
	// (keys.dimensions, e.g. [tenant service model variant]); nil when it
	// fits. fusebox shards the processors' state by tenant, so a kind
	// that aggregates keys (scaling's scope) must keep the tenant when the
	// keys have one. Never nil: a kind with nothing to check returns nil.
	CheckDimensions func(cfg Config, dims []string) error
}

// KindFuncs are one kind's functions over its own configuration type C
// and processor type P, what NewKind adapts to a Kind (see Kind for what
// each does). Every field is required but CheckDimensions (nil: nothing
// to check).
type KindFuncs[C any, P Processor] struct {
	Default    func() C
	Sample     func() C
	New        func(meta Meta, cfg C) (P, error)
	Every      func(cfg *C) time.Duration
	Metrics    func(cfg *C) []string // any order: Kind.Metrics sorts
	Summary    func(cfg *C) string
	StateShape func(cfg *C) any

	CheckDimensions func(cfg *C, dims []string) error
}

// NewKind adapts a processor package's typed functions to a Kind. C is the
// package's Config struct, whose pointer implements Config, P its
// processor type; PC is *C (inferred). It panics when name is empty or a
// required field of f is nil (a programming error in the kind's package).
func NewKind[C any, P Processor, PC interface {
	*C
	Config
}](name string, f KindFuncs[C, P]) Kind {
	if name == "" || f.Default == nil || f.Sample == nil || f.New == nil || f.Every == nil || f.Metrics == nil || f.Summary == nil || f.StateShape == nil {
		panic("processors: NewKind(" + strconv.Quote(name) + "): a name or a required KindFuncs field is missing")
	}
	return Kind{
		Name:    name,
		Default: func() Config { c := f.Default(); return PC(&c) },
		Sample:  func() Config { c := f.Sample(); return PC(&c) },
		New: func(meta Meta, cfg Config) (Processor, error) {
			p, err := f.New(meta, *cfg.(PC))
			if err != nil {
				return nil, err
			}
			return p, nil
		},
		Every: func(cfg Config) time.Duration { return f.Every(cfg.(PC)) },
		Metrics: func(cfg Config) []string {
			m := f.Metrics(cfg.(PC))
			slices.Sort(m)
			return m
		},
		Summary:    func(cfg Config) string { return f.Summary(cfg.(PC)) },
		StateShape: func(cfg Config) any { return f.StateShape(cfg.(PC)) },
		CheckDimensions: func(cfg Config, dims []string) error {
			c := cfg.(PC)
			if f.CheckDimensions == nil {
				return nil
			}
			return f.CheckDimensions(c, dims)
		},
	}
}
