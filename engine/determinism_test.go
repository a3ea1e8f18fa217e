package engine_test

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// orderedRun is the determinism scenario routed in time order, computed
// once per test binary and compared with every other run below.
var orderedRun = sync.OnceValues(func() (determinismRun, error) {
	cfg, _, err := replay.Production()
	if err != nil {
		return determinismRun{}, err
	}
	src, err := replay.Generate(replay.CompactScenario(), replay.Start, replay.CompactDuration, replay.GenConfig{})
	if err != nil {
		return determinismRun{}, err
	}
	res, err := replay.Drive(cfg, replay.Route(src, replay.RouteConfig{}))
	return determinismRun{cfg: cfg, src: src, res: res}, err
})

type determinismRun struct {
	cfg engine.WorkerConfig
	src replay.Sources
	res replay.Result
}

// TestSameInputSameVerdicts: the same records in the same order, twice,
// give the same output bit for bit (verdicts with their ids and numbers,
// fuse commands, rollups).
func TestSameInputSameVerdicts(t *testing.T) {
	t.Parallel()
	want, err := orderedRun()
	if err != nil {
		t.Fatal(err)
	}
	a := want.res
	breaches := 0
	for _, v := range a.Output.Verdicts {
		if v.Status == schemas.StatusBreach {
			breaches++
		}
	}
	if breaches == 0 || len(a.Output.Commands) == 0 || len(a.Output.Rollups) == 0 {
		t.Fatalf("the comparison is too weak: %d breaches, %d commands, %d rollups", breaches, len(a.Output.Commands), len(a.Output.Rollups))
	}
	b := mustDrive(t, want.cfg, replay.Route(want.src, replay.RouteConfig{}))
	requireEqualOutput(t, "second run", a, b)
	t.Logf("%d verdicts (%d breaches), %d commands, %d rollups", len(a.Output.Verdicts), breaches, len(a.Output.Commands), len(a.Output.Rollups))
}

// TestOutOfOrderWithinLatenessSameVerdicts: reordering records within the
// allowed lateness — spans delayed by up to 5 s and moved to other source
// partitions, corrections delayed likewise (the production file allows
// 10 s) — and interleaving the source partitions differently (at random,
// corrections first) change nothing: no record is late and the output is
// the ordered input's, bit for bit.
func TestOutOfOrderWithinLatenessSameVerdicts(t *testing.T) {
	t.Parallel()
	want, err := orderedRun()
	if err != nil {
		t.Fatal(err)
	}
	if want.cfg.AllowedLateness != 10*time.Second {
		t.Fatalf("allowed lateness %v: the shuffles below assume 10s", want.cfg.AllowedLateness)
	}
	shuffled, err := replay.Shuffle(want.src, 5*time.Second, 60, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		src   replay.Sources
		order replay.Interleaving
	}{
		{"random interleaving", want.src, replay.Random(1)},
		{"shuffled within 5s, corrections first", shuffled, replay.Reversed},
		{"shuffled within 5s, random interleaving", shuffled, replay.Random(2)},
	} {
		got := mustDrive(t, want.cfg, replay.Route(c.src, replay.RouteConfig{Order: c.order}))
		if got.Stats.LateSpans != 0 || got.Stats.LateCorrections != 0 {
			t.Fatalf("%s: %d late spans, %d late corrections within the lateness", c.name, got.Stats.LateSpans, got.Stats.LateCorrections)
		}
		requireEqualOutput(t, c.name, want.res, got)
	}
}

// TestStragglerBeyondLatenessIsCounted is the control of the test above: a
// message of minute 2 published after minute 8 of its partition is more
// than the lateness behind its partition: each of its spans is counted
// late, none is folded in, and every span is accounted for.
func TestStragglerBeyondLatenessIsCounted(t *testing.T) {
	t.Parallel()
	cfg, _, err := replay.Production()
	if err != nil {
		t.Fatal(err)
	}
	src := mustGenerate(t, replay.CompactScenario(), 10*time.Minute)
	p := &src[0]
	i := len(p.Messages) / 5
	straggler := p.Messages[i]
	p.Messages = append(append(p.Messages[:i:i], p.Messages[i+1:]...), straggler)
	for j := range p.Messages {
		p.Messages[j].Offset = int64(j)
	}
	got := mustDrive(t, cfg, replay.Route(src, replay.RouteConfig{}))
	if got.Stats.LateSpans != int64(len(straggler.Spans)) {
		t.Fatalf("%d late spans, want the straggler's %d", got.Stats.LateSpans, len(straggler.Spans))
	}
	if n := got.Stats.Spans + got.Stats.LateSpans; n != int64(src.Spans()) {
		t.Fatalf("%d on-time + %d late spans, %d published", got.Stats.Spans, got.Stats.LateSpans, src.Spans())
	}
}

func mustGenerate(t *testing.T, sc traffic.Scenario, d time.Duration) replay.Sources {
	t.Helper()
	src, err := replay.Generate(sc, replay.Start, d, replay.GenConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func mustDrive(t *testing.T, cfg engine.WorkerConfig, keyed [][]engine.KeyedRecord) replay.Result {
	t.Helper()
	res, err := replay.Drive(cfg, keyed)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// requireEqualOutput fails with the first difference between two runs.
func requireEqualOutput(t *testing.T, name string, want, got replay.Result) {
	t.Helper()
	for p := range want.Partitions {
		w, g := want.Partitions[p], got.Partitions[p]
		for i := 0; i < min(len(w.Verdicts), len(g.Verdicts)); i++ {
			if !reflect.DeepEqual(w.Verdicts[i], g.Verdicts[i]) {
				t.Fatalf("%s: keyed partition %d, verdict %d:\n got: %s\nwant: %s", name, p, i, verdictLine(&g.Verdicts[i]), verdictLine(&w.Verdicts[i]))
			}
		}
		if len(w.Verdicts) != len(g.Verdicts) {
			t.Fatalf("%s: keyed partition %d: %d verdicts, want %d", name, p, len(g.Verdicts), len(w.Verdicts))
		}
		if !reflect.DeepEqual(w.Commands, g.Commands) {
			t.Fatalf("%s: keyed partition %d: fuse commands differ (%d, want %d)", name, p, len(g.Commands), len(w.Commands))
		}
		if !reflect.DeepEqual(w.Rollups, g.Rollups) {
			t.Fatalf("%s: keyed partition %d: rollups differ (%d, want %d)", name, p, len(g.Rollups), len(w.Rollups))
		}
	}
}
