package calibrate

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/breaker"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/schemas"
)

// alignedInput is 2 h of calls of three models (gpt-4o-mini the busiest)
// carrying alignment scores, with corrections of 2% of them.
func alignedInput(models map[string]float64) *Input {
	return alignedInputWith(9, models, nil, nil)
}

// alignedInputWith is alignedInput with a seed and, when not nil, an
// alignment shift and a correction probability per model at t seconds
// from the start (incidents).
func alignedInputWith(seed uint64, models map[string]float64, shift, corrected func(model string, t float64) float64) *Input {
	rng := rand.New(rand.NewPCG(seed, 10))
	in := &Input{}
	start := shapeStart.UnixNano()
	n := 0
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	slices.Sort(names)
	for _, model := range names {
		rate := models[model]
		for _, tenant := range []string{"acme", "globex"} {
			k := schemas.Key{Tenant: tenant, Service: "chat", Model: model, Variant: "baseline"}
			for t := 0.0; t < 7200; t += rng.ExpFloat64() / rate {
				end := start + int64(t*1e9)
				d := 800 * (0.5 + rng.Float64())
				a := 0.8 + 0.1*rng.Float64()
				if shift != nil {
					a += shift(model, t)
				}
				s := schemas.Span{Key: k, StartUnixNano: end - int64(d*1e6), EndUnixNano: end, DurationMs: d,
					Alignment: clamp01(a), Has: schemas.HasAlignment}
				s.TraceID[0], s.TraceID[1], s.TraceID[2], s.TraceID[3] = byte(n), byte(n>>8), byte(n>>16), byte(seed)
				n++
				in.Spans = append(in.Spans, s)
				p := 0.02
				if corrected != nil {
					p = corrected(model, t)
				}
				if rng.Float64() < p {
					in.Corrections = append(in.Corrections, schemas.Correction{SchemaVersion: 1, EventID: fmt.Sprintf("c%d-%d", seed, n),
						TimeUnixNano: end + int64(time.Second), Tenant: tenant, TraceID: s.TraceID, Kind: "reject"})
				}
			}
		}
	}
	in.Sort()
	return in
}

// TestDecayAndCorrectionIncidentsCommanded: calibrated on 2 h of clean
// scored traffic (seed 9), the proposal trips nothing on 2 h of another
// seed, and on a third seed commands an alignment decline of gpt-4o's
// keys (−0.2 over the hour from 30 min: decay, a degrade to the busiest
// model) and a correction spike on claude-3-7 (2% → 15% from 40 min:
// corrections' correction_rate, a degrade); the delays are logged.
func TestDecayAndCorrectionIncidentsCommanded(t *testing.T) {
	models := map[string]float64{"gpt-4o-mini": 3, "gpt-4o": 1, "claude-3-7": 1}
	p, err := Propose(alignedInput(models), Config{})
	if err != nil {
		t.Fatal(err)
	}
	clean, err := RunFile("proposed/clean", []byte(p.YAML), alignedInputWith(21, models, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	clean.Print(&out)
	if n := clean.Trips(); n != 0 {
		t.Errorf("%d trips on clean scored traffic of another seed:\n%s", n, out.String())
	}
	decline := func(model string, t float64) float64 {
		if model != "gpt-4o" || t < 1800 {
			return 0
		}
		return -0.2 * min(1, (t-1800)/3600)
	}
	spike := func(model string, t float64) float64 {
		if model == "claude-3-7" && t >= 2400 {
			return 0.15
		}
		return 0.02
	}
	inc, err := RunFile("proposed/incidents", []byte(p.YAML), alignedInputWith(22, models, decline, spike))
	if err != nil {
		t.Fatal(err)
	}
	inc.Print(&out)
	for _, want := range []struct {
		processor, model string
		start            time.Duration
	}{{"decay", "gpt-4o", 30 * time.Minute}, {"corrections", "claude-3-7", 40 * time.Minute}} {
		found := false
		for _, s := range inc.SLOs {
			if s.Processor != want.processor {
				continue
			}
			for _, tg := range s.TripTargets {
				if tg.Model == want.model && !found {
					found = true
					delay := time.Duration(s.FirstTrip - shapeStart.Add(want.start).UnixNano())
					t.Logf("%s on %s commanded by %s, first command %s after the start", want.processor, want.model, s.SLO, delay.Round(time.Minute))
				}
				if tg.Model != want.model {
					t.Errorf("%s commanded %v, which no incident touched", s.SLO, tg)
				}
			}
		}
		if !found {
			t.Errorf("%s incident on %s not commanded:\n%s\n%s", want.processor, want.model, p.YAML, out.String())
		}
	}
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
	levels := 0
	for _, s := range f.SLOs {
		if s.Name == "alignment-decay" && !slices.Equal(s.Match.Model, []string{"claude-3-7", "gpt-4o"}) {
			t.Errorf("alignment-decay matches models %v, want the two that are not the fallback", s.Match.Model)
		}
		// The levels stay at or under the processors' defaults: corrections'
		// 1e-7 is under the Bonferroni bound of the default target (6.9e-7),
		// and 1e-6 gave a false trip in 3,888 key-days.
		sec, _ := s.Processor()
		switch c := sec.Config.(type) {
		case *corrections.Config:
			levels++
			if c.Alpha > corrections.DefaultConfig().Alpha {
				t.Errorf("%s: alpha %g, above the corrections processor's default %g", s.Name, c.Alpha, corrections.DefaultConfig().Alpha)
			}
		case *decay.Config:
			levels++
			if c.Alpha > decay.DefaultConfig().Alpha {
				t.Errorf("%s: alpha %g, above the decay processor's default %g", s.Name, c.Alpha, decay.DefaultConfig().Alpha)
			}
		}
	}
	if levels != 4 {
		t.Errorf("%d decay and corrections SLOs in the proposal, want 4:\n%s", levels, p.YAML)
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
	inputs := map[string]*Input{"scored, with corrections": alignedInput(map[string]float64{"gpt-4o-mini": 3, "gpt-4o": 1})}
	for _, sh := range []shape{timeoutShape(), burstyShape(), heterogeneousShape()} {
		inputs[sh.name] = sh.generate(t, 4, time.Hour, nil)
	}
	for name, in := range inputs {
		sh := struct{ name string }{name}
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
