package replay

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TestNoIncidentNoBreach: the golden traffic without its incidents, over 2
// hours of event time, through every processor of the production SLO file,
// gives zero breaches and no fuse command: seed 42 at the golden rate (100
// calls/s) and two more seeds at it, where canaries are small (about one
// call per second) and the tests work with the fewest samples, and one
// seed at 200 calls/s. (The demo's own 400 calls/s, seed 42, was clean
// too when measured; it costs 40 s of CPU a run.) Warns are allowed (they are the "look at this"
// level) and logged per processor.
func TestNoIncidentNoBreach(t *testing.T) {
	cfg, _, err := Production()
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		seed uint64
		rate float64
	}
	runs := []run{{42, 100}, {1, 100}, {4, 100}, {2, 200}}
	if testing.Short() {
		runs = runs[1:2]
	}
	for _, r := range runs {
		t.Run(fmt.Sprintf("seed%d_rate%g", r.seed, r.rate), func(t *testing.T) {
			t.Parallel()
			sc := Quiet(GoldenScenario())
			sc.Seed, sc.Rate = r.seed, r.rate
			src, err := Generate(sc, Start, 2*time.Hour, GenConfig{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Drive(cfg, Route(src, RouteConfig{}))
			if err != nil {
				t.Fatal(err)
			}
			warns := map[string]int{}
			seen := map[string]bool{}
			for i := range res.Output.Verdicts {
				v := &res.Output.Verdicts[i]
				seen[v.Processor] = true
				switch v.Status {
				case schemas.StatusBreach:
					t.Errorf("false breach at +%v: %s %s %s %s value %.4g threshold %.4g [%.4g, %.4g] n %d %v",
						time.Duration(v.WindowEndUnixNano-Start.UnixNano()), v.Processor, v.SLO, v.Metric, v.Key.String(),
						v.Value, v.Threshold, v.Lower, v.Upper, v.N, v.Details)
				case schemas.StatusWarn:
					warns[v.Processor+"/"+v.Metric]++
				}
			}
			for _, p := range []string{"tail", "drift", "decay", "corrections", "scaling", "burnrate"} {
				if !seen[p] {
					t.Errorf("no %s verdict: the soak does not exercise it", p)
				}
			}
			if n := len(res.Output.Commands); n != 0 {
				t.Errorf("%d fuse commands without an incident; first %+v", n, res.Output.Commands[0])
			}
			if res.Stats.LateSpans != 0 {
				t.Errorf("%d late spans from in-order traffic", res.Stats.LateSpans)
			}
			t.Logf("%d spans, %d verdicts; warns: %s", res.Stats.Spans, len(res.Output.Verdicts), formatCounts(warns))
		})
	}
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
