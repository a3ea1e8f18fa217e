package config

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/breaker"
	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/processors/rollup"
)

// RollupSLO is the reserved name of the rollup processor's SLO entry.
const RollupSLO = "_rollup"

// WorkerConfig turns a loaded SLO file into what every partition worker
// runs: one processor per SLO entry (in file order), the rollups, the
// breaker and the effect judge.
func WorkerConfig(f *File) (engine.WorkerConfig, error) {
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
			MaxKeys:      f.Keys.MaxKeys,
			IdleTTLNanos: int64(f.Keys.IdleTTL),
		},
		AllowedLateness:   f.Time.AllowedLateness,
		CheckpointVersion: f.Compat.CheckpointVersion(),
		// A source is live (its silence advances an all-idle partition)
		// up to the lateness plus the idle timeout behind the clock: the
		// tracing SDK's and collector's batching (OTel's batch span
		// processor alone waits 5s) must not make a live service look
		// like a backfill under a small lateness.
		LiveLag: f.Time.AllowedLateness + f.Time.IdleSourceTimeout,
		// The incident stage's input (topics.summaries).
		Summaries: f.Incidents.Enabled, AttributedSLOs: f.AttributedSLOs(),
	}
	answers := f.Answers.Rule()
	for i := range f.SLOs {
		s := f.SLOs[i]
		meta := processors.Meta{SLO: s.Name, ConfigVersion: f.Version, Answers: answers}
		spec := engine.SLOSpec{Meta: meta, Match: s.Match, StateID: StateID(f, s)}
		sec, ok := s.Processor()
		if !ok {
			return engine.WorkerConfig{}, fmt.Errorf("slos[%d]: want one processor section, got %d", i, len(s.Sections))
		}
		spec.New = func() (processors.Processor, error) { return sec.Kind.New(meta, sec.Config) }
		// Fail now, at start, rather than at the first partition.
		if _, err := spec.New(); err != nil {
			return engine.WorkerConfig{}, fmt.Errorf("slos[%d] %s: %w", i, s.Name, err)
		}
		wc.SLOs = append(wc.SLOs, spec)
	}
	if f.Rollups.Enabled {
		rc := rollup.Config{MaxSamplesPerMinute: f.Rollups.MaxSamplesPerMinute, Answers: answers}
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
	// Every command's effect is judged in its signal's SLO interval.
	intervals := map[string]time.Duration{}
	for _, s := range f.SLOs {
		intervals[s.Name] = every(s)
	}
	eff := f.Effect
	if _, err := effect.New(eff, f.Version, intervals); err != nil {
		return engine.WorkerConfig{}, fmt.Errorf("effect: %w", err)
	}
	wc.NewEffects = func() (engine.Effects, error) { return effect.New(eff, f.Version, intervals) }
	return wc, nil
}

// MinEvery is the shortest evaluation interval of the SLOs: the
// heartbeat cadence of the router must be finer than it.
func MinEvery(f *File) time.Duration {
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

func every(s SLO) time.Duration {
	if sec, ok := s.Processor(); ok {
		return sec.Config.Interval()
	}
	return 0
}
