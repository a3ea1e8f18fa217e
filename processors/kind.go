package processors

import (
	"slices"
	"strconv"
	"time"
)

// Config is one SLO entry's processor section, decoded: a pointer to the
// kind's own Config struct (*tail.Config for tail, and so on). It
// describes itself: what its fields make of the processor built from it
// is said by the Config, next to the fields, not by a table elsewhere.
//
// A Config that must fit the SLO file's key dimensions implements
// DimensionChecker too.
//
// A Config some of whose metrics are evaluated less often than Interval
// implements MetricIntervals.
type Config interface {
	// Validate reports every wrong field as a *ConfigError relative to
	// the section.
	Validate() error
	// Interval is the evaluation interval (event time) of a processor
	// built from the Config: its Processor.Interval.
	Interval() time.Duration
	// Metrics lists the verdict metrics (schemas.Verdict.Metric) a
	// processor built from the Config can emit, in any order (Kind.Metrics
	// sorts): what a breaker rule's `metric` may name for the SLO.
	Metrics() []string
	// Summary says in one line what an SLO of this configuration checks
	// (`fusebox config check`).
	Summary() string
	// StateShape returns the parameters that shape what the processor's
	// windows hold (the metric, window lengths, the interval, caps,
	// variants, ...), never nil. It goes into the SLO's state id: a
	// checkpoint's state of an SLO is restored only when its shape is
	// unchanged. Parameters that only judge what the windows hold
	// (budgets, p, alpha, limits, minimum counts) are left out, so editing
	// them keeps the state.
	StateShape() any
}

// DimensionChecker is the optional part of a Config that depends on the
// SLO file's key dimensions (keys.dimensions, e.g. [tenant service model
// variant]). fusebox shards the processors' state by tenant, so a kind
// that aggregates keys (scaling's scope) must keep the tenant when the
// keys have one.
type DimensionChecker interface {
	// CheckDimensions reports, as *ConfigError relative to the section,
	// what does not fit dims; nil when it fits.
	CheckDimensions(dims []string) error
}

// Kind is one SLO processor kind: everything the rest of fusebox needs to
// decode, check, describe, build and checkpoint an SLO of that kind. Each
// processor package exports its own (tail.Kind(), drift.Kind(), ...) from
// a file kind.go, built with NewKind; processors/registry lists them.
//
// Every function takes a Config of this kind (as returned by Default,
// possibly decoded over); given another kind's, it panics. What a Config
// says of itself (Interval, Summary, StateShape) is asked of it directly.
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
	// Metrics is cfg.Metrics(), sorted.
	Metrics func(cfg Config) []string
	// CheckDimensions is cfg.CheckDimensions(dims) when the kind's Config
	// is a DimensionChecker, otherwise nil (nothing to check). Never nil
	// itself.
	CheckDimensions func(cfg Config, dims []string) error
}

// NewKind makes the Kind of a processor package: name, its Config's
// defaults (Kind.Default), a valid sample (Kind.Sample; pass defaults
// again when the defaults validate) and its constructor (Kind.New). C is
// the package's Config struct, whose pointer PC (inferred) implements
// Config, P its processor type. Whether PC is a DimensionChecker is
// decided here, once. It panics when name is empty or a function is nil
// (a programming error in the kind's package).
func NewKind[C any, P Processor, PC interface {
	*C
	Config
}](name string, defaults, sample func() C, build func(meta Meta, cfg C) (P, error)) Kind {
	if name == "" || defaults == nil || sample == nil || build == nil {
		panic("processors: NewKind(" + strconv.Quote(name) + "): a name or a function is missing")
	}
	checkDims := func(PC, []string) error { return nil }
	if _, ok := any(PC(nil)).(DimensionChecker); ok {
		checkDims = func(c PC, dims []string) error { return any(c).(DimensionChecker).CheckDimensions(dims) }
	}
	return Kind{
		Name:    name,
		Default: func() Config { c := defaults(); return PC(&c) },
		Sample:  func() Config { c := sample(); return PC(&c) },
		New: func(meta Meta, cfg Config) (Processor, error) {
			p, err := build(meta, *cfg.(PC))
			if err != nil {
				return nil, err
			}
			return p, nil
		},
		Metrics: func(cfg Config) []string {
			m := cfg.(PC).Metrics()
			slices.Sort(m)
			return m
		},
		CheckDimensions: func(cfg Config, dims []string) error { return checkDims(cfg.(PC), dims) },
	}
}

// MetricIntervals is implemented by a Config some of whose verdict
// metrics are evaluated less often than its Interval (drift: ks every
// `every`, cusum and slice every `step`). MetricIntervals maps each metric
// of Metrics to its evaluation interval (event time). A reader that takes
// one boundary's verdicts of an SLO as the SLO's whole state — the
// incident stage's evaluation summaries — cannot read such an SLO: a
// metric not due at a boundary would look healthy there.
type MetricIntervals interface {
	MetricIntervals() map[string]time.Duration
}
