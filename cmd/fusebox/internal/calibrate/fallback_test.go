package calibrate

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/breaker"
	"github.com/fusebox-dev/fusebox/schemas"
)

// alignedInput is 2 h of calls of three models (gpt-4o-mini the busiest)
// carrying alignment scores, with corrections of 2% of them.
func alignedInput(models map[string]float64) *Input {
	rng := rand.New(rand.NewPCG(9, 10))
	in := &Input{}
	start := shapeStart.UnixNano()
	n := 0
	for model, rate := range models {
		for _, tenant := range []string{"acme", "globex"} {
			k := schemas.Key{Tenant: tenant, Service: "chat", Model: model, Variant: "baseline"}
			for t := 0.0; t < 7200; t += rng.ExpFloat64() / rate {
				end := start + int64(t*1e9)
				d := 800 * (0.5 + rng.Float64())
				s := schemas.Span{Key: k, StartUnixNano: end - int64(d*1e6), EndUnixNano: end, DurationMs: d,
					Alignment: 0.8 + 0.1*rng.Float64(), Has: schemas.HasAlignment}
				s.TraceID[0], s.TraceID[1], s.TraceID[2] = byte(n), byte(n>>8), byte(n>>16)
				n++
				in.Spans = append(in.Spans, s)
				if rng.Float64() < 0.02 {
					in.Corrections = append(in.Corrections, schemas.Correction{SchemaVersion: 1, EventID: "c" + time.Duration(end).String(),
						TimeUnixNano: end + int64(time.Second), Tenant: tenant, TraceID: s.TraceID, Kind: "reject"})
				}
			}
		}
	}
	in.Sort()
	return in
}

// rulesOf parses the proposal and returns its breaker rules.
func rulesOf(t *testing.T, p Proposal) []breaker.Rule {
	t.Helper()
	f, err := config.Parse("proposed.yaml", []byte(p.YAML))
	if err != nil {
		t.Fatalf("proposed file does not load: %v\n%s", err, p.YAML)
	}
	return f.Breaker.Rules
}

func hasRule(rules []breaker.Rule, processor, slo, metric string, action schemas.Action, fallback string) bool {
	return slices.ContainsFunc(rules, func(r breaker.Rule) bool {
		return r.Processor == processor && r.SLO == slo && r.Metric == metric && r.Action == action && r.Fallback == fallback
	})
}

// TestProposalActsOnDecayAndCorrections: a proposal made from traffic with
// alignment scores and corrections commands both — a degrade to the
// busiest model for the other models' keys, a trip for that model's own
// (a degrade to itself would change nothing) — and with one model only, a
// trip; it never leaves them verdicts only.
func TestProposalActsOnDecayAndCorrections(t *testing.T) {
	p, err := Propose(alignedInput(map[string]float64{"gpt-4o-mini": 3, "gpt-4o": 1, "claude-3-7": 0.5}), Config{})
	if err != nil {
		t.Fatal(err)
	}
	rules := rulesOf(t, p)
	for _, want := range []struct {
		processor, slo, metric string
		action                 schemas.Action
		fallback               string
	}{
		{"decay", "alignment-decay", "", schemas.ActionDegrade, "gpt-4o-mini"},
		{"decay", "alignment-decay-gpt-4o-mini", "", schemas.ActionTrip, ""},
		{"corrections", "user-corrections", "correction_rate", schemas.ActionDegrade, "gpt-4o-mini"},
		{"corrections", "user-corrections-gpt-4o-mini", "correction_rate", schemas.ActionTrip, ""},
	} {
		if !hasRule(rules, want.processor, want.slo, want.metric, want.action, want.fallback) {
			t.Errorf("no rule %+v in the proposal:\n%s", want, p.YAML)
		}
	}
	f, _ := config.Parse("proposed.yaml", []byte(p.YAML))
	for _, s := range f.SLOs {
		if s.Name == "alignment-decay" && !slices.Equal(s.Match.Model, []string{"claude-3-7", "gpt-4o"}) {
			t.Errorf("alignment-decay matches models %v, want the two that are not the fallback", s.Match.Model)
		}
	}

	one, err := Propose(alignedInput(map[string]float64{"gpt-4o": 2}), Config{})
	if err != nil {
		t.Fatal(err)
	}
	rules = rulesOf(t, one)
	if !hasRule(rules, "decay", "alignment-decay", "", schemas.ActionTrip, "") ||
		!hasRule(rules, "corrections", "user-corrections", "correction_rate", schemas.ActionTrip, "") {
		t.Errorf("one model: want trips on decay and correction_rate:\n%s", one.YAML)
	}
}

// TestEverySLOHasARuleOrSaysWhy: on every shape, each SLO of the proposal
// is acted on by a breaker rule of its processor (naming it, or naming no
// SLO), or is listed in NoAction with the reason — nothing is detected
// and silently never commanded.
func TestEverySLOHasARuleOrSaysWhy(t *testing.T) {
	for _, sh := range []shape{timeoutShape(), burstyShape(), heterogeneousShape()} {
		in := sh.generate(t, 4, time.Hour, nil)
		p, err := Propose(in, Config{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := config.Parse("proposed.yaml", []byte(p.YAML))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.SLOs {
			sec, _ := s.Processor()
			acted := slices.ContainsFunc(f.Breaker.Rules, func(r breaker.Rule) bool {
				return r.Processor == sec.Kind.Name && (r.SLO == "" || r.SLO == s.Name)
			})
			said := slices.ContainsFunc(p.NoAction, func(n string) bool { return strings.HasPrefix(n, s.Name+" ") })
			if acted == said {
				t.Errorf("%s: SLO %s (%s): acted on %v, in NoAction %v: want exactly one\n%s", sh.name, s.Name, sec.Kind.Name, acted, said, p.YAML)
			}
		}
	}
}
