// Package demo is `fusebox demo`: one command, nothing to install. It
// starts an embedded Kafka-protocol broker (franz-go's kfake), publishes the
// built-in scenario's traffic with the generator, runs the whole pipeline on
// it with the built-in SLO file, reads the fuse commands back the way a
// gateway does (fuse.Client, signatures verified) and shows it all in a
// live terminal view — or, headless, as lines.
//
// The scenario (Scenario) and the SLO file (ConfigYAML) are tuned together:
// every scripted incident trips its target's breaker and the breaker closes
// again once the incident is over, and nothing trips anywhere else.
// Incidents lists, per incident, the target whose breaker it trips and the
// action the policy maps it to.
package demo

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// ConfigYAML is the built-in SLO file. The demo replaces the brokers, the
// JSONL path and, with --clickhouse, the ClickHouse section.
//
// Windows are short (5 to 10 minutes of event time, evaluated every
// minute) so that an incident is seen within minutes and its windows clear
// soon after it ends; the breaker trips on 3 breaches among a series' last
// 5 evaluations, stays open 4 minutes (doubling on a re-trip) and closes
// after 3 healthy evaluations in a row.
const ConfigYAML = `# fusebox demo: the built-in SLO file.
version: demo-v1
kafka:
  brokers: [127.0.0.1:9092]   # replaced by the embedded broker
  group: fusebox-demo
  client_id: fusebox-demo
topics:
  keyed_partitions: 4   # one per tenant of the scenario (the keyed topic is partitioned by tenant)
time:
  allowed_lateness: 30s
  idle_source_timeout: 2s
  checkpoint_every: 1s
http:
  listen: 127.0.0.1:9464   # /metrics, /readyz and the live page (--http; a busy default port falls back to a free one)
  ui: true                 # the live page on /ui/ (--ui=false turns it off)
slos:
  # Latency tail: P99.9 of the call duration against a 15 s budget, by
  # peaks over threshold on a 5-minute window.
  - name: latency-p999
    tail: {metric: duration_ms, p: 0.999, budget: 15000, window: 5m, every: 1m}
  # Canary confidence: the canary's confidence scores against the
  # baseline's (Kolmogorov-Smirnov), 3 significant evaluations in a row.
  - name: canary-confidence
    drift: {metric: confidence, mode: canary, window: 5m, every: 1m, consecutive: 3}
  # Alignment decay: the decline of the alignment score over 10 minutes.
  - name: alignment-decay
    decay: {metric: alignment, window: 10m, every: 1m, limit: -0.12}
  # Corrections: the share of answers users correct, budget 8%.
  - name: corrections
    corrections: {window: 5m, every: 1m, join_window: 5m, max_rate: 0.08}
  # Request mix: normalised entropy of (route, model) and latency spread
  # per tenant and service; wide and spread means scale out.
  - name: request-mix
    scaling: {scope: [tenant, service], mix: [route, model], window: 5m, every: 1m, stddev_budget_ms: 800, entropy_low: 0.3}
  # Availability: error-budget burn rate of a 99.9% SLO, one page rule
  # with windows short enough for the demo.
  - name: availability
    burnrate:
      target: 0.999
      page: [{long: 15m, short: 3m, factor: 14.4}]
      ticket: []
breaker:
  target: [tenant, service, model]
  k: 3
  n: 5
  cool_down: 4m
  max_cool_down: 30m
  close_after: 3
  command_ttl: 10m
  rules:
    - {processor: tail, action: trip}
    - {processor: drift, action: rollback, fallback: baseline, target: [tenant, service, model, variant]}
    - {processor: decay, action: degrade, fallback: gpt-4o-mini}
    - {processor: corrections, metric: correction_rate, action: degrade, fallback: gpt-4o-mini}
    - {processor: corrections, metric: canary_correction_rate, action: rollback, fallback: baseline, target: [tenant, service, model, variant]}
    - {processor: scaling, action: scale_out, target: [tenant, service]}
    - {processor: burnrate, metric: burn_rate_page, action: trip}
`

// Config parses ConfigYAML with brokers as the Kafka seeds.
func Config(brokers ...string) (*config.File, error) {
	f, err := config.Parse("demo.yaml", []byte(ConfigYAML))
	if err != nil {
		return nil, fmt.Errorf("demo: the built-in SLO file: %w", err)
	}
	if len(brokers) > 0 {
		f.Kafka.Brokers = brokers
	}
	return f, nil
}

// Incident is a scripted incident and what it must do to the breakers.
type Incident struct {
	traffic.Incident
	// Target is the breaker target it trips (wildcards as in commands).
	Target schemas.Key
	// Processor is the processor whose breaches trip it, Action the
	// action the policy maps them to.
	Processor string
	Action    schemas.Action
}

// Covers reports whether command target t is Target or one of its keys
// (the incident's scope).
func (i *Incident) Covers(t schemas.Key) bool {
	m := func(scope, v string) bool { return scope == schemas.Wildcard || scope == v }
	return m(i.Target.Tenant, t.Tenant) && m(i.Target.Service, t.Service) && m(i.Target.Model, t.Model) && m(i.Target.Variant, t.Variant)
}

// Scenario is the built-in traffic: the keys of traffic.Demo (three
// tenants, two services, three models with canaries) at 200 calls per
// second of event time, 60 minutes long, with six incidents about five
// minutes apart (see Incidents): they run from minute 8 to 38 and every
// breaker has closed again by minute 42; the rest is warm-up and margin.
func Scenario() traffic.Scenario {
	sc := traffic.Demo()
	sc.Name = "fusebox-demo"
	sc.Rate = 200
	sc.Duration = 60 * time.Minute
	sc.Incidents = make([]traffic.Incident, 0, len(incidents))
	for _, i := range incidents {
		sc.Incidents = append(sc.Incidents, i.Incident)
	}
	return sc
}

// Incidents returns the scenario's incidents with their targets and
// actions, in start order.
func Incidents() []Incident { return append([]Incident(nil), incidents...) }

func key(tenant, service, model, variant string) schemas.Key {
	return schemas.Key{Tenant: tenant, Service: service, Model: model, Variant: variant}
}

const w = schemas.Wildcard

var incidents = []Incident{
	{
		Incident: traffic.Incident{Name: "latency tail", Kind: traffic.TailBlowup, Start: 8 * time.Minute, End: 13 * time.Minute,
			Target: traffic.Target{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini"}, Magnitude: 0.03},
		Target: key("acme", "chat", "gpt-4o-mini", w), Processor: "tail", Action: schemas.ActionTrip,
	},
	{
		Incident: traffic.Incident{Name: "canary confidence", Kind: traffic.CanaryDrift, Start: 13 * time.Minute, End: 19 * time.Minute,
			Target: traffic.Target{Tenant: "globex", Service: "chat", Model: "claude-3-5-haiku", Variant: "canary"}, Magnitude: 0.2},
		Target: key("globex", "chat", "claude-3-5-haiku", "canary"), Processor: "drift", Action: schemas.ActionRollback,
	},
	{
		Incident: traffic.Incident{Name: "alignment decay", Kind: traffic.AlignmentDecay, Start: 18 * time.Minute, End: 26 * time.Minute,
			Target: traffic.Target{Tenant: "initech", Service: "search", Model: "llama-3-70b"}, Magnitude: 0.45},
		Target: key("initech", "search", "llama-3-70b", w), Processor: "decay", Action: schemas.ActionDegrade,
	},
	{
		Incident: traffic.Incident{Name: "correction spike", Kind: traffic.CorrectionSpike, Start: 23 * time.Minute, End: 29 * time.Minute,
			Target: traffic.Target{Tenant: "acme", Service: "search", Model: "claude-3-5-haiku"}, Magnitude: 0.3},
		Target: key("acme", "search", "claude-3-5-haiku", w), Processor: "corrections", Action: schemas.ActionDegrade,
	},
	{
		Incident: traffic.Incident{Name: "traffic mix", Kind: traffic.MixShift, Start: 28 * time.Minute, End: 34 * time.Minute,
			Target: traffic.Target{Tenant: "globex", Service: "search"}, Magnitude: 2},
		Target: key("globex", "search", w, w), Processor: "scaling", Action: schemas.ActionScaleOut,
	},
	{
		Incident: traffic.Incident{Name: "provider errors", Kind: traffic.ErrorBurst, Start: 33 * time.Minute, End: 38 * time.Minute,
			Target: traffic.Target{Tenant: "initech", Service: "chat", Model: "gpt-4o-mini"}, Magnitude: 0.2},
		Target: key("initech", "chat", "gpt-4o-mini", w), Processor: "burnrate", Action: schemas.ActionTrip,
	},
}
