package pipeline

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/breaker"
	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/rollup"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
)

// RollupSLO is the reserved name of the rollup processor's SLO entry.
const RollupSLO = "_rollup"

// WorkerConfig turns a loaded SLO file into what every partition worker
// runs: one processor per SLO entry (in file order), the rollups, the
// breaker.
func WorkerConfig(f *config.File) (engine.WorkerConfig, error) {
	dims, bad, ok := engine.ParseKeyDims(f.Keys.Dimensions)
	if !ok {
		return engine.WorkerConfig{}, fmt.Errorf("keys.dimensions: unknown dimension %q", bad)
	}
	wc := engine.WorkerConfig{
		ConfigVersion: f.Version,
		KeyDims:       dims,
		Guard: engine.GuardConfig{
			MaxTenants: f.Keys.MaxTenants, MaxServices: f.Keys.MaxServices,
			MaxModels: f.Keys.MaxModels, MaxVariants: f.Keys.MaxVariants,
			IdleTTLNanos: int64(f.Keys.IdleTTL),
		},
		AllowedLateness: f.Time.AllowedLateness,
	}
	for i := range f.SLOs {
		s := f.SLOs[i]
		meta := processors.Meta{SLO: s.Name, ConfigVersion: f.Version}
		spec := engine.SLOSpec{Meta: meta, Match: engine.Match(s.Match), StateID: StateID(f, s)}
		switch {
		case s.Tail != nil:
			c := *s.Tail
			spec.New = func() (processors.Processor, error) { return tail.New(meta, c) }
		case s.Drift != nil:
			c := *s.Drift
			spec.New = func() (processors.Processor, error) { return drift.New(meta, c) }
		case s.Decay != nil:
			c := *s.Decay
			spec.New = func() (processors.Processor, error) { return decay.New(meta, c) }
		case s.Scaling != nil:
			c := *s.Scaling
			spec.New = func() (processors.Processor, error) { return scaling.New(meta, c) }
		case s.Corrections != nil:
			c := *s.Corrections
			spec.New = func() (processors.Processor, error) { return corrections.New(meta, c) }
		case s.Burnrate != nil:
			c := *s.Burnrate
			spec.New = func() (processors.Processor, error) { return burnrate.New(meta, c) }
		default:
			return engine.WorkerConfig{}, fmt.Errorf("slos[%d]: no processor section", i)
		}
		// Fail now, at start, rather than at the first partition.
		if _, err := spec.New(); err != nil {
			return engine.WorkerConfig{}, fmt.Errorf("slos[%d] %s: %w", i, s.Name, err)
		}
		wc.SLOs = append(wc.SLOs, spec)
	}
	if f.Rollups.Enabled {
		rc := rollup.Config{MaxSamplesPerMinute: f.Rollups.MaxSamplesPerMinute}
		wc.SLOs = append(wc.SLOs, engine.SLOSpec{
			Meta:    processors.Meta{SLO: RollupSLO, ConfigVersion: f.Version},
			StateID: rollupStateID(f),
			New:     func() (processors.Processor, error) { return rollup.New(rc) },
		})
	}
	pol := f.Breaker
	if _, err := breaker.New(pol); err != nil {
		return engine.WorkerConfig{}, fmt.Errorf("breaker: %w", err)
	}
	wc.NewBreaker = func() (engine.Breaker, error) { return breaker.New(pol) }
	wc.BreakerStateID = BreakerStateID(f)
	return wc, nil
}

// minEvery is the shortest evaluation interval of the SLOs: the
// heartbeat cadence of the router must be finer than it.
func minEvery(f *config.File) time.Duration {
	m := time.Minute
	for _, s := range f.SLOs {
		for _, d := range []time.Duration{every(s)} {
			if d > 0 && d < m {
				m = d
			}
		}
	}
	return m
}

func every(s config.SLO) time.Duration {
	switch {
	case s.Tail != nil:
		return s.Tail.Every
	case s.Drift != nil:
		return s.Drift.Every
	case s.Decay != nil:
		return s.Decay.Every
	case s.Scaling != nil:
		return s.Scaling.Every
	case s.Corrections != nil:
		return s.Corrections.Every
	case s.Burnrate != nil:
		return s.Burnrate.Every
	}
	return 0
}
