package processors

import "github.com/fusebox-dev/fusebox/schemas"

// Probes maps a key to the start of its probe (Unix ns of event time):
// the key belongs to a half-open breaker target that this SLO tripped, so
// its verdicts must judge only the traffic admitted since the half-open
// began, not a full window that may still hold the incident.
//
// The engine derives the map from the breaker's state before every
// evaluation (Breaker.ProbesFor) and hands it to every Prober: it is a
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

// Prober is implemented by processors whose verdicts can judge a key on
// the traffic since a time (tail, decay, corrections). SetProbes replaces
// the probes; a key probed since s is judged on [max(now-window, s), now)
// — a window that grows from the half-open's start until it is the full
// window again — and on at least the processor's min_samples of it, or
// its verdict is insufficient_data and the breaker waits. A key with no
// record at all since s gets no verdict (the breaker waits too).
type Prober interface {
	SetProbes(p Probes)
}
