package engine_test

import (
	"reflect"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/enginebench"
	"github.com/fusebox-dev/fusebox/schemas"
)

func isEffect(v schemas.Verdict) bool { return v.Processor == "effect" }

// TestEffectVerdictsSurviveRestarts: the determinism scenario's fuse
// commands get effect verdicts (one per command that is not a refresh, a
// unique id each), and a worker checkpointed while a judgement is pending,
// killed after more records and restored from the checkpoint (the records
// since replayed) writes exactly the verdicts, effect verdicts included, of
// the uninterrupted run: the pending judgement is neither lost nor
// decided twice.
func TestEffectVerdictsSurviveRestarts(t *testing.T) {
	t.Parallel()
	want, err := orderedRun()
	if err != nil {
		t.Fatal(err)
	}
	keyed := enginebench.Route(want.src, enginebench.RouteConfig{})
	ids := map[string]bool{}
	tested := 0
	for p, out := range want.res.Partitions {
		var pending *schemas.Verdict
		for i := range out.Verdicts {
			v := &out.Verdicts[i]
			if !isEffect(*v) {
				continue
			}
			if ids[v.ID] {
				t.Fatalf("effect verdict id %s twice", v.ID)
			}
			ids[v.ID] = true
			if n, _ := v.Detail("evaluations"); n >= 2 && pending == nil {
				pending = v
			}
		}
		if pending == nil {
			continue
		}
		// Checkpoint half-way through the judgement, crash 40 records
		// later.
		mid := pending.WindowStartUnixNano + (pending.WindowEndUnixNano-pending.WindowStartUnixNano)/2
		recs := keyed[p]
		snapAt := -1
		for i := range recs {
			if recs[i].SourceMaxEventTime >= mid {
				snapAt = i
				break
			}
		}
		if snapAt < 0 || snapAt+40 >= len(recs) {
			continue
		}
		got := run(t, want.cfg, int32(p), recs, snapAt, snapAt+40)
		if !reflect.DeepEqual(got.Verdicts, out.Verdicts) {
			n := min(len(got.Verdicts), len(out.Verdicts))
			for i := 0; i < n; i++ {
				if !reflect.DeepEqual(got.Verdicts[i], out.Verdicts[i]) {
					t.Fatalf("partition %d, restart inside the judgement of %s: verdict %d\n got  %s\n want %s", p, pending.Method, i, verdictLine(&got.Verdicts[i]), verdictLine(&out.Verdicts[i]))
				}
			}
			t.Fatalf("partition %d: %d verdicts after the restart, want %d", p, len(got.Verdicts), len(out.Verdicts))
		}
		tested++
	}
	if tested == 0 || len(ids) == 0 {
		t.Fatalf("the scenario gave %d effect verdicts and no partition with a judgement to restart inside", len(ids))
	}
	commands := 0
	for _, c := range want.res.Output.Commands {
		_ = c
		commands++
	}
	if len(ids) > commands {
		t.Fatalf("%d effect verdicts for %d commands", len(ids), commands)
	}
	t.Logf("%d effect verdicts for %d commands; %d partitions restarted inside a judgement", len(ids), commands, tested)
}
