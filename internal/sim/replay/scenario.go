package replay

import (
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
)

// GoldenScenario is traffic.Demo (seed 42, its five scripted incidents) at
// 100 calls/s (the demo runs 400; a quarter keeps the golden test's CPU
// time down, and small keys are the harder case: canaries get about one
// call a second) with an error burst added, so that every processor kind
// has an incident to catch:
//
//	20m-35m  latency tail      acme/chat/gpt-4o-mini          tail
//	30m-50m  canary confidence globex/chat/claude-3-5-haiku/canary  drift
//	40m-50m  error burst       initech/chat                   burnrate
//	45m-75m  alignment decay   initech/search/llama-3-70b     decay
//	60m-75m  correction spike  acme/search/claude-3-5-haiku   corrections
//	80m-95m  traffic mix       globex/search                  scaling
//
// GoldenDuration of it covers every incident and the minutes after the last.
func GoldenScenario() traffic.Scenario {
	sc := traffic.Demo()
	sc.Rate = 100
	sc.Incidents = append(sc.Incidents, traffic.Incident{
		Name: "error burst", Kind: traffic.ErrorBurst, Start: 40 * time.Minute, End: 50 * time.Minute,
		Target: traffic.Target{Tenant: "initech", Service: "chat"}, Magnitude: 0.5,
	})
	return sc
}

// GoldenDuration is the event time of the golden run.
const GoldenDuration = 100 * time.Minute

// Quiet is sc without its incidents.
func Quiet(sc traffic.Scenario) traffic.Scenario {
	sc.Incidents = nil
	return sc
}

// CompactScenario packs an incident of every kind into CompactDuration of
// the demo traffic (seed 7, 100 calls/s), so that runs compared with each
// other carry breaches, k-consecutive counters, corrections joined across
// partitions and breaker commands, not only ok verdicts:
//
//	 5m-35m alignment decay   initech/search/llama-3-70b
//	 5m-15m latency tail      acme/chat/gpt-4o-mini
//	 8m-20m canary confidence globex/chat/claude-3-5-haiku/canary
//	10m-16m error burst       initech/chat
//	12m-22m correction spike  acme/search/claude-3-5-haiku
//	15m-25m traffic mix       globex/search
func CompactScenario() traffic.Scenario {
	sc := traffic.Demo()
	sc.Seed, sc.Rate = 7, 100
	m := time.Minute
	sc.Incidents = []traffic.Incident{
		{Name: "tail", Kind: traffic.TailBlowup, Start: 5 * m, End: 15 * m, Target: traffic.Target{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini"}, Magnitude: 0.03},
		{Name: "canary", Kind: traffic.CanaryDrift, Start: 8 * m, End: 20 * m, Target: traffic.Target{Tenant: "globex", Service: "chat", Model: "claude-3-5-haiku", Variant: "canary"}, Magnitude: 0.2},
		{Name: "errors", Kind: traffic.ErrorBurst, Start: 10 * m, End: 16 * m, Target: traffic.Target{Tenant: "initech", Service: "chat"}, Magnitude: 0.5},
		{Name: "corrections", Kind: traffic.CorrectionSpike, Start: 12 * m, End: 22 * m, Target: traffic.Target{Tenant: "acme", Service: "search", Model: "claude-3-5-haiku"}, Magnitude: 0.3},
		{Name: "mix", Kind: traffic.MixShift, Start: 15 * m, End: 25 * m, Target: traffic.Target{Tenant: "globex", Service: "search"}, Magnitude: 3},
		{Name: "alignment", Kind: traffic.AlignmentDecay, Start: 5 * m, End: 35 * m, Target: traffic.Target{Tenant: "initech", Service: "search", Model: "llama-3-70b"}, Magnitude: 0.45},
	}
	return sc
}

// CompactDuration is the event time of CompactScenario.
const CompactDuration = 35 * time.Minute
