package engine

import (
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// starvedID names one starved signal of one target.
type starvedID struct {
	target                 schemas.Key
	processor, slo, metric string
}

// watchStarved logs the half-open targets whose probes became too few to
// judge them (WARN, once per streak) and those that are judged again or
// left the half-open (INFO), and publishes them for StarvedTargets. It runs
// after every batch, so the WARN comes within the evaluation that made the
// starvation sure (see processors.StarvedProbe).
func (p *keyedPartition) watchStarved() {
	seen := [3]int64{p.w.stats.Evaluations, p.w.stats.SkippedEvaluations, p.w.stats.Commands}
	if p.starvedWalked && seen == p.starvedSeen {
		return
	}
	p.starvedSeen, p.starvedWalked = seen, true
	now := p.w.StarvedProbes()
	cur := make(map[starvedID]processors.StarvedProbe, len(now))
	for _, s := range now {
		id := starvedID{s.Target, s.Processor, s.SLO, s.Metric}
		cur[id] = s
		if _, logged := p.starved[id]; logged {
			continue
		}
		attrs := []any{"partition", p.partition, "target", s.Target.String(), "slo", s.SLO, "processor", s.Processor, "metric", s.Metric,
			"probes", s.Probes}
		if s.MinSamples > 0 {
			// Only tail and drift verdicts carry their min_samples; a
			// burn-rate verdict's minimum is min_events, and it says n=0.
			attrs = append(attrs, "min_samples", s.MinSamples)
		}
		attrs = append(attrs, "since", time.Unix(0, s.Since).UTC())
		p.k.cfg.Logger.Warn("half-open target starved: its probes are too few to judge it, so it neither closes nor re-trips and stays half-open while the traffic stays this thin; raise breaker.half_open_fraction or the SLO's window, or lower its minimum (min_samples; min_events for burnrate)",
			attrs...)
	}
	for id, s := range p.starved {
		if _, still := cur[id]; !still {
			p.k.cfg.Logger.Info("half-open target no longer starved (its probes judge it again, or it left the half-open)",
				"partition", p.partition, "target", id.target.String(), "slo", id.slo, "processor", id.processor, "metric", id.metric,
				"starved_since", time.Unix(0, s.Since).UTC())
		}
	}
	p.starved = cur
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	if p.k.starvedSLOs == nil {
		p.k.starvedSLOs = map[string]bool{}
	}
	for _, s := range now {
		p.k.starvedSLOs[s.SLO] = true
	}
	if len(now) == 0 {
		delete(p.k.starved, p.partition)
	} else {
		p.k.starved[p.partition] = now
	}
}

// StarvedTargets counts, per SLO, the half-open targets of the keyed
// partitions this process owns whose probes of that SLO are too few to
// judge them (processors.StarvedProbe); an SLO counted once stays, at 0
// when none.
func (k *Keyed) StarvedTargets() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]int, len(k.starvedSLOs))
	for slo := range k.starvedSLOs {
		out[slo] = 0
	}
	seen := map[[2]string]bool{}
	for _, ss := range k.starved {
		for _, s := range ss {
			id := [2]string{s.SLO, s.Target.String()}
			if !seen[id] {
				seen[id] = true
				out[s.SLO]++
			}
		}
	}
	return out
}
