package calibrate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestProposeDegenerateRecordings: every proposal loads and runs, and its
// replay on the recording it was made from trips nothing, on recordings a
// real user may bring that the shapes do not cover — constant latency
// (a fixed-delay stub or a cache), constant scores, a single key, no
// errors, no canaries. (Constant latency once proposed
// scaling.stddev_budget_ms: 0 and then refused its own file: with
// constant latency the proposed budget is checked to be positive and at
// least the floor, stddevFloorMs.)
func TestProposeDegenerateRecordings(t *testing.T) {
	one := []shapeKey{{key("acme", "chat", "gpt-4o", "baseline"), 3, 800}}
	constScores := incident{name: "constant scores", start: 0, end: 24 * time.Hour,
		match: func(schemas.Key) bool { return true },
		apply: func(_ *rand.Rand, s *schemas.Span) { s.Confidence, s.Alignment = 0.8, 0.85 }}
	cases := []struct {
		name     string
		sh       shape
		incs     []incident
		constant bool // constant latency: the scaling budget is the floor
	}{
		{"constant latency, one key, no errors", shape{name: "constant", keys: one,
			latency: func(_ *rand.Rand, k *shapeKey) (float64, bool) { return k.median, false }}, nil, true},
		{"constant latency and scores", shape{name: "constant-all", keys: one,
			latency: func(_ *rand.Rand, k *shapeKey) (float64, bool) { return k.median, false }}, []incident{constScores}, true},
		{"one key, lognormal, no errors, no canary", shape{name: "single", keys: one,
			latency: func(r *rand.Rand, k *shapeKey) (float64, bool) { return k.median * (1 + 0.3*r.Float64()), false }}, nil, false},
		{"two latencies only", shape{name: "bimodal", keys: one,
			latency: func(r *rand.Rand, k *shapeKey) (float64, bool) {
				if r.Float64() < 0.5 {
					return k.median, false
				}
				return 2 * k.median, false
			}}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.sh.generate(t, 7, time.Hour, tc.incs)
			p, err := Propose(in, Config{})
			if err != nil {
				t.Fatal(err)
			}
			f, err := config.Parse("proposed.yaml", []byte(p.YAML))
			if err != nil {
				t.Fatalf("the proposed file does not load: %v\n%s", err, p.YAML)
			}
			if tc.constant {
				budget, found := 0.0, false
				for i := range f.SLOs {
					if sec, ok := f.SLOs[i].Processor(); ok {
						if c, ok := sec.Config.(*scaling.Config); ok {
							budget, found = c.StdDevBudgetMs, true
						}
					}
				}
				floor := stddevFloorMs(in)
				if !found || !(budget > 0) || budget < floor {
					t.Errorf("constant latency: scaling stddev_budget_ms %v (found %v), want > 0 and at least the floor %v ms:\n%s", budget, found, floor, p.YAML)
				}
				t.Logf("constant latency: stddev_budget_ms %v, floor %v ms", budget, floor)
			}
			rep, err := RunFile("proposed", []byte(p.YAML), in)
			if err != nil {
				t.Fatalf("the proposed file does not run: %v\n%s", err, p.YAML)
			}
			if n := rep.Trips(); n != 0 {
				t.Errorf("%d trips replaying the recording it was made from:\n%s", n, p.YAML)
			}
		})
	}
}
