package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/schemas"
	"go.yaml.in/yaml/v3"
)

// editTraffic is the compact scenario (an incident of every kind in 35
// minutes) at 60 calls/s, routed to 2 keyed partitions.
var editTraffic = sync.OnceValues(func() ([][]engine.KeyedRecord, error) {
	sc := replay.CompactScenario()
	sc.Seed, sc.Rate = 5, 60
	src, err := replay.Generate(sc, replay.Start, replay.CompactDuration, replay.GenConfig{SpanPartitions: 2, SpansPerMessage: 100})
	if err != nil {
		return nil, err
	}
	return replay.Route(src, replay.RouteConfig{KeyedPartitions: 2}), nil
})

// editedProduction is the production SLO file with edit applied to its
// YAML document.
func editedProduction(t *testing.T, edit func(doc map[string]any)) engine.WorkerConfig {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(replay.ProductionYAML, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "version") // the default: a hash of what decides verdicts
	if edit != nil {
		edit(doc)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	wc, _, err := replay.ParseWorkerConfig("edited.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

func slo(doc map[string]any, name string) map[string]any {
	for _, s := range doc["slos"].([]any) {
		if m := s.(map[string]any); m["name"] == name {
			return m
		}
	}
	panic("no SLO " + name)
}

// verdictKey and verdictValue compare verdicts across config versions: the
// id and the config version differ by design.
func verdictKey(v schemas.Verdict) string {
	return fmt.Sprint(v.SLO, "|", v.Metric, "|", v.Key.String(), "|", v.WindowEndUnixNano)
}

// verdictValue is what a verdict's windows decide, not how it is judged:
// the statistic, its interval, the sample size and method (a budget, an
// alpha or a limit changes the status and threshold, not these).
func verdictValue(v schemas.Verdict) string {
	return fmt.Sprint(v.WindowStartUnixNano, " ", v.Value, " [", v.Lower, ", ", v.Upper, "] n=", v.N, " ", v.Method)
}

// TestSLOFileEditsKeepWhatTheyDoNotInvalidate restarts a partition
// worker, checkpointed under the production SLO file, under an edited file
// — one kind of edit per case — and checks (1) the restore report: which
// SLOs are kept, reset, added or removed, and whether the breaker is kept;
// (2) the state kept: after the restart, every kept SLO's verdicts equal,
// value for value, those of an uninterrupted run under the edited file
// (its windows were carried over, not refilled), and every reset or
// added SLO's do not (it started empty: fewer values at first); a removed
// SLO writes nothing.
func TestSLOFileEditsKeepWhatTheyDoNotInvalidate(t *testing.T) {
	t.Parallel()
	keyed, err := editTraffic()
	if err != nil {
		t.Fatal(err)
	}
	recs := keyed[0]
	if len(keyed[1]) > len(recs) {
		recs = keyed[1]
	}
	base := editedProduction(t, nil)
	all := []string{"latency-p999", "canary-confidence", "alignment-trend", "user-corrections", "capacity", "availability", "_rollup"}
	type want struct {
		reset, added, removed []string
		breaker               engine.Change
	}
	cases := []struct {
		name string
		edit func(doc map[string]any)
		want want
	}{
		{"budget, alpha, limit, target and a breaker rule", func(doc map[string]any) {
			slo(doc, "latency-p999")["tail"].(map[string]any)["budget"] = 2500
			slo(doc, "canary-confidence")["drift"].(map[string]any)["alpha"] = 0.01
			slo(doc, "alignment-trend")["decay"].(map[string]any)["limit"] = -0.05
			slo(doc, "availability")["burnrate"].(map[string]any)["min_bad_events"] = 3
			slo(doc, "user-corrections")["corrections"].(map[string]any)["max_rate"] = 0.02
			doc["breaker"].(map[string]any)["k"] = 2
			doc["breaker"].(map[string]any)["rules"] = []any{map[string]any{"processor": "tail", "action": "degrade", "fallback": "small"}}
		}, want{breaker: engine.Kept}},
		{"a window", func(doc map[string]any) {
			slo(doc, "latency-p999")["tail"].(map[string]any)["window"] = "5m"
		}, want{reset: []string{"latency-p999"}, breaker: engine.Kept}},
		{"a match", func(doc map[string]any) {
			slo(doc, "alignment-trend")["match"] = map[string]any{"variant": []any{"stable", "canary"}}
		}, want{reset: []string{"alignment-trend"}, breaker: engine.Kept}},
		{"an SLO added", func(doc map[string]any) {
			doc["slos"] = append(doc["slos"].([]any), map[string]any{"name": "ttft-p99",
				"tail": map[string]any{"metric": "ttft_ms", "p": 0.99, "budget": 2000, "window": "10m", "every": "1m"}})
		}, want{added: []string{"ttft-p99"}, breaker: engine.Kept}},
		{"an SLO removed", func(doc map[string]any) {
			doc["slos"] = slices.DeleteFunc(doc["slos"].([]any), func(s any) bool { return s.(map[string]any)["name"] == "capacity" })
			doc["breaker"].(map[string]any)["rules"] = slices.DeleteFunc(doc["breaker"].(map[string]any)["rules"].([]any),
				func(r any) bool { return r.(map[string]any)["processor"] == "scaling" })
		}, want{removed: []string{"capacity"}, breaker: engine.Kept}},
		{"the breaker's target dimensions", func(doc map[string]any) {
			doc["breaker"].(map[string]any)["target"] = []any{"tenant", "service", "model"}
		}, want{breaker: engine.Reset}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			edited := editedProduction(t, c.edit)
			// Checkpoint under the old file at 60% of the stream.
			w, err := engine.NewWorker(base, 0)
			if err != nil {
				t.Fatal(err)
			}
			cut := len(recs) * 6 / 10
			for i := range recs[:cut] {
				w.Apply(&recs[i])
			}
			w.TakeOutput()
			snapAt := w.Stats().Watermark
			snap, err := w.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			r, rep, err := engine.RestoreWorker(edited, 0, snap)
			if err != nil {
				t.Fatal(err)
			}
			// (1) the report.
			var gotReset, gotAdded, gotRemoved, gotKept []string
			for _, s := range rep.SLOs {
				switch s.Change {
				case engine.Reset:
					gotReset = append(gotReset, s.SLO)
				case engine.Added:
					gotAdded = append(gotAdded, s.SLO)
				case engine.Removed:
					gotRemoved = append(gotRemoved, s.SLO)
				case engine.Kept:
					gotKept = append(gotKept, s.SLO)
				}
			}
			var wantKept []string
			for _, n := range all {
				if !slices.Contains(c.want.reset, n) && !slices.Contains(c.want.removed, n) {
					wantKept = append(wantKept, n)
				}
			}
			if fmt.Sprint(gotReset, gotAdded, gotRemoved, gotKept, rep.Breaker) != fmt.Sprint(c.want.reset, c.want.added, c.want.removed, wantKept, c.want.breaker) {
				t.Fatalf("restore report: reset %v added %v removed %v kept %v breaker %q;\nwant reset %v added %v removed %v kept %v breaker %q",
					gotReset, gotAdded, gotRemoved, gotKept, rep.Breaker, c.want.reset, c.want.added, c.want.removed, wantKept, c.want.breaker)
			}
			if plan := engine.PlanChanges(stateEntries(base), base.BreakerStateID, edited); fmt.Sprint(plan.SLOs, plan.Breaker) != fmt.Sprint(rep.SLOs, rep.Breaker) {
				t.Fatalf("PlanChanges (config diff) says %v %q, the restore did %v %q", plan.SLOs, plan.Breaker, rep.SLOs, rep.Breaker)
			}
			if r.NextOffset() != w.NextOffset() || r.Stats().Watermark != snapAt {
				t.Fatalf("position not kept: offset %d watermark %d, want %d %d", r.NextOffset(), r.Stats().Watermark, w.NextOffset(), snapAt)
			}
			// (2) the state kept: the restored run vs an uninterrupted one
			// under the edited file, after the checkpoint.
			for i := int(r.NextOffset()); i < len(recs); i++ {
				r.Apply(&recs[i])
			}
			after := r.TakeOutput()
			ref, err := engine.NewWorker(edited, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs {
				ref.Apply(&recs[i])
			}
			refOut := ref.TakeOutput()
			got, exp := map[string]map[string]string{}, map[string]map[string]string{}
			// Effect verdicts judge the breaker's commands, which differ
			// by design when a breaker rule was edited; they are compared
			// across restarts under one configuration in
			// TestEffectVerdictsSurviveRestarts.
			after.Verdicts = slices.DeleteFunc(after.Verdicts, isEffect)
			refOut.Verdicts = slices.DeleteFunc(refOut.Verdicts, isEffect)
			for _, v := range after.Verdicts {
				if got[v.SLO] == nil {
					got[v.SLO] = map[string]string{}
				}
				got[v.SLO][verdictKey(v)] = verdictValue(v)
			}
			for _, v := range refOut.Verdicts {
				if v.WindowEndUnixNano <= snapAt {
					continue
				}
				if exp[v.SLO] == nil {
					exp[v.SLO] = map[string]string{}
				}
				exp[v.SLO][verdictKey(v)] = verdictValue(v)
			}
			// The rollups (kept in every case) emit rows, not verdicts: each
			// row after the restart, the minute open at the checkpoint
			// included, equals the uninterrupted run's.
			refRows := map[string]string{}
			for _, ro := range refOut.Rollups {
				refRows[fmt.Sprint(ro.Key.String(), ro.MinuteUnixNano)] = fmt.Sprintf("%+v", ro)
			}
			for _, ro := range after.Rollups {
				if k := fmt.Sprint(ro.Key.String(), ro.MinuteUnixNano); refRows[k] != fmt.Sprintf("%+v", ro) {
					t.Fatalf("rollup %s after the restart:\n got  %+v\n want %s", k, ro, refRows[k])
				}
			}
			if len(after.Rollups) == 0 {
				t.Fatal("no rollup rows after the restart")
			}
			for _, s := range rep.SLOs {
				g, e := got[s.SLO], exp[s.SLO]
				switch s.Change {
				case engine.Removed:
					if len(g) > 0 {
						t.Errorf("removed SLO %s wrote %d verdicts after the restart", s.SLO, len(g))
					}
					continue
				case engine.Kept:
					if s.SLO == "_rollup" {
						continue // compared above
					}
					if len(e) == 0 {
						t.Fatalf("kept SLO %s: no verdict after the checkpoint in the uninterrupted run", s.SLO)
					}
					diff, probes := 0, 0
					for k, ev := range e {
						gv, ok := g[k]
						if ok && gv != ev && windowStart(gv) != windowStart(ev) {
							// A half-open probe verdict on one side (its
							// window starts at the half-open): the
							// breaker's history differs by design when
							// what judges the verdicts changed.
							probes++
							continue
						}
						if !ok || gv != ev {
							if diff++; diff <= 2 {
								t.Errorf("kept SLO %s: verdict %s after the restart\n got  %s\n want %s", s.SLO, k, gv, ev)
							}
						}
					}
					if diff > 0 || len(g) != len(e) || probes > len(e)/4 {
						t.Errorf("kept SLO %s: %d of %d verdicts differ from the uninterrupted run, %d probe windows (%d written)", s.SLO, diff, len(e), probes, len(g))
					}
				default: // reset, added: started empty
					same := 0
					for k, ev := range e {
						if g[k] == ev {
							same++
						}
					}
					if len(g) == 0 || same == len(e) {
						t.Errorf("%s SLO %s: %d verdicts after the restart, %d of %d equal to the uninterrupted run's: it did not start empty", s.Change, s.SLO, len(g), same, len(e))
					}
				}
			}
		})
	}
}

// windowStart is the window start of a verdictValue.
func windowStart(v string) string {
	start, _, _ := strings.Cut(v, " ")
	return start
}

func stateEntries(wc engine.WorkerConfig) []engine.StateEntry {
	var out []engine.StateEntry
	for _, s := range wc.SLOs {
		out = append(out, engine.StateEntry{SLO: s.Meta.SLO, StateID: s.StateID})
	}
	return out
}
