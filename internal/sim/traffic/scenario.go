// Package traffic generates realistic, seeded LLM-serving traffic — OTLP
// spans with the GenAI conventions and user-correction events — with
// scripted incidents, for `fusebox gen`, `fusebox demo` and the tests.
//
// The same Scenario and seed always give the same records in the same
// order; event time advances by the scenario's rate, independent of the
// wall clock (pacing is the caller's business).
package traffic

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Kind is what an incident does to the traffic it targets.
type Kind string

const (
	// TailBlowup gives a share (Magnitude, e.g. 0.03) of calls a Pareto
	// tail on top of their latency: P99.9 explodes, the median barely moves.
	TailBlowup Kind = "tail_blowup"
	// CanaryDrift lowers the confidence score by Magnitude (e.g. 0.15).
	CanaryDrift Kind = "canary_drift"
	// AlignmentDecay lowers the alignment score linearly from 0 at the
	// incident's start to Magnitude (e.g. 0.3) at its end.
	AlignmentDecay Kind = "alignment_decay"
	// CorrectionSpike raises the share of corrected responses to Magnitude
	// (e.g. 0.25).
	CorrectionSpike Kind = "correction_spike"
	// MixShift spreads requests evenly over many routes and makes latency
	// more variable (Magnitude multiplies its log-sd, e.g. 2.5).
	MixShift Kind = "mix_shift"
	// ErrorBurst makes a share (Magnitude) of calls fail.
	ErrorBurst Kind = "error_burst"
)

// Kinds lists every incident kind.
var Kinds = []Kind{TailBlowup, CanaryDrift, AlignmentDecay, CorrectionSpike, MixShift, ErrorBurst}

// Target selects the keys an incident hits; empty fields match all.
type Target struct {
	Tenant  string `yaml:"tenant"`
	Service string `yaml:"service"`
	Model   string `yaml:"model"`
	Variant string `yaml:"variant"`
}

// Incident is one scripted problem.
type Incident struct {
	Name      string        `yaml:"name"`
	Kind      Kind          `yaml:"kind"`
	Start     time.Duration `yaml:"start"` // offset from the scenario start (event time)
	End       time.Duration `yaml:"end"`
	Target    Target        `yaml:"target"`
	Magnitude float64       `yaml:"magnitude"`
}

// Active reports whether the incident is on at offset d.
func (i *Incident) Active(d time.Duration) bool { return d >= i.Start && d < i.End }

// Scenario describes the traffic.
type Scenario struct {
	Name string `yaml:"name"`
	Seed uint64 `yaml:"seed"`
	// Rate is LLM calls per second of event time, over all keys.
	Rate float64 `yaml:"rate"`
	// Duration of event time; 0 runs until stopped.
	Duration time.Duration `yaml:"duration"`
	Tenants  []string      `yaml:"tenants"`
	Services []string      `yaml:"services"`
	Models   []string      `yaml:"models"`
	// CanaryShare is the share of each model's calls on the "canary"
	// variant (the rest on "baseline"). 0 disables canaries.
	CanaryShare float64 `yaml:"canary_share"`
	// Routes are the request routes; the first takes RouteSkew of the
	// traffic normally (a low-entropy mix).
	Routes    []string `yaml:"routes"`
	RouteSkew float64  `yaml:"route_skew"`
	// MedianLatency and LatencySigma are the lognormal latency of a call.
	MedianLatency time.Duration `yaml:"median_latency"`
	LatencySigma  float64       `yaml:"latency_sigma"`
	// ErrorRate is the baseline share of failed calls.
	ErrorRate float64 `yaml:"error_rate"`
	// CorrectionRate is the baseline share of responses users correct.
	CorrectionRate float64 `yaml:"correction_rate"`
	// NonLLMShare is the share of extra spans without a model (HTTP,
	// database): decoders must skip them.
	NonLLMShare float64    `yaml:"non_llm_share"`
	Incidents   []Incident `yaml:"incidents"`
}

// Validate reports what is wrong, naming the field.
func (s *Scenario) Validate() error {
	var errs []error
	bad := func(cond bool, field, why string) {
		if cond {
			errs = append(errs, fmt.Errorf("scenario %s: %s", field, why))
		}
	}
	bad(!(s.Rate > 0), "rate", "must be positive")
	bad(len(s.Tenants) == 0, "tenants", "list at least one")
	bad(len(s.Services) == 0, "services", "list at least one")
	bad(len(s.Models) == 0, "models", "list at least one")
	bad(len(s.Routes) == 0, "routes", "list at least one")
	bad(s.CanaryShare < 0 || s.CanaryShare >= 1, "canary_share", "must be in [0, 1)")
	bad(s.RouteSkew < 0 || s.RouteSkew > 1, "route_skew", "must be in [0, 1]")
	bad(s.MedianLatency <= 0, "median_latency", "must be positive")
	bad(s.LatencySigma <= 0, "latency_sigma", "must be positive")
	bad(s.ErrorRate < 0 || s.ErrorRate >= 1, "error_rate", "must be in [0, 1)")
	bad(s.CorrectionRate < 0 || s.CorrectionRate >= 1, "correction_rate", "must be in [0, 1)")
	bad(s.NonLLMShare < 0 || s.NonLLMShare >= 1, "non_llm_share", "must be in [0, 1)")
	for i, inc := range s.Incidents {
		f := "incidents[" + strconv.Itoa(i) + "]"
		known := false
		for _, k := range Kinds {
			known = known || inc.Kind == k
		}
		bad(!known, f+".kind", "unknown kind "+strconv.Quote(string(inc.Kind)))
		bad(inc.End <= inc.Start, f+".end", "must be after start")
		bad(!(inc.Magnitude > 0), f+".magnitude", "must be positive")
	}
	return errors.Join(errs...)
}

// LoadScenario reads a YAML scenario file over the defaults of Demo.
func LoadScenario(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := Demo()
	s.Incidents = nil
	dec := yaml.NewDecoder(bytesReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// Demo is the scenario the engine's and pipeline's tests share (two hours
// at 400 spans/s): three tenants, two services, three models with
// canaries, and five incidents — one of each kind except ErrorBurst —
// spaced so that each trips its breaker and recovers. `fusebox demo`
// plays a scenario of its own (cmd/fusebox/internal/demo.Scenario).
func Demo() Scenario {
	return Scenario{
		Name:           "demo",
		Seed:           42,
		Rate:           400,
		Duration:       2 * time.Hour,
		Tenants:        []string{"acme", "globex", "initech"},
		Services:       []string{"chat", "search"},
		Models:         []string{"gpt-4o-mini", "claude-3-5-haiku", "llama-3-70b"},
		CanaryShare:    0.2,
		Routes:         []string{"/v1/chat", "/v1/answer", "/v1/summarize", "/v1/extract", "/v1/classify", "/v1/translate", "/v1/rewrite", "/v1/plan"},
		RouteSkew:      0.9,
		MedianLatency:  800 * time.Millisecond,
		LatencySigma:   0.35,
		ErrorRate:      0.0002,
		CorrectionRate: 0.02,
		NonLLMShare:    0.2,
		Incidents: []Incident{
			{Name: "latency tail", Kind: TailBlowup, Start: 20 * time.Minute, End: 35 * time.Minute,
				Target: Target{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini"}, Magnitude: 0.03},
			{Name: "canary confidence", Kind: CanaryDrift, Start: 30 * time.Minute, End: 50 * time.Minute,
				Target: Target{Tenant: "globex", Service: "chat", Model: "claude-3-5-haiku", Variant: "canary"}, Magnitude: 0.2},
			{Name: "alignment decay", Kind: AlignmentDecay, Start: 45 * time.Minute, End: 75 * time.Minute,
				Target: Target{Tenant: "initech", Service: "search", Model: "llama-3-70b"}, Magnitude: 0.45},
			{Name: "correction spike", Kind: CorrectionSpike, Start: 60 * time.Minute, End: 75 * time.Minute,
				Target: Target{Tenant: "acme", Service: "search", Model: "claude-3-5-haiku"}, Magnitude: 0.3},
			{Name: "traffic mix", Kind: MixShift, Start: 80 * time.Minute, End: 95 * time.Minute,
				Target: Target{Tenant: "globex", Service: "search"}, Magnitude: 3},
		},
	}
}
