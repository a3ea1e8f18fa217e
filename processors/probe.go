package processors

import "github.com/fusebox-dev/fusebox/schemas"

// Probes maps a key to the start of its probe (Unix ns of event time):
// the key belongs to a half-open breaker target that this SLO tripped, so
// its verdicts must judge only the traffic admitted since the half-open
// began, not a full window that may still hold the incident.
//
// The engine derives the map from the breaker's state before every
// evaluation (Breaker.ProbesFor) and hands it to every processor with Hooks.SetProbes: it is a
// function of the verdicts seen so far, never of the wall clock, so
// replays and restarts give the same probes and the same verdicts.
type Probes map[schemas.Key]int64

// From is the start of the window key is judged on: the probe's start
// when the key is probed and it is later than from, else from.
func (p Probes) From(key schemas.Key, from int64) int64 {
	if s, ok := p[key]; ok && s > from {
		return s
	}
	return from
}

// StarvedProbe is a half-open breaker target that its probes cannot
// judge: a verdict of an SLO that tripped it, on a full probe window (one
// that began after the half-open did, so it no longer grows), was
// insufficient_data, and no ok or warn of that SLO came since. Such a
// target neither closes nor re-trips (the breaker has no evidence either
// way) and stays half-open for as long as the traffic stays too thin:
// half_open_fraction × the target's request rate × the SLO's window is
// below its min_samples. The breaker reports it (Breaker.StarvedProbes)
// so that the engine can log and count it; it is part of the breaker's
// checkpointed state, as deterministic as its commands.
type StarvedProbe struct {
	Target                 schemas.Key
	Processor, SLO, Metric string
	// Probes is the n of the latest insufficient_data verdict: the
	// observations in its probe window.
	Probes int64
	// MinSamples is the processor's min_samples as that verdict states it
	// (its "min_samples" detail); 0 when the verdict does not say.
	MinSamples int64
	// Since is the evaluation time (Unix ns) of the first starved verdict
	// of this streak; At that of the latest.
	Since, At int64
}
