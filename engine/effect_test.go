package engine_test

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/schemas"
)

func isEffect(v schemas.Verdict) bool { return v.Processor == "effect" }

// TestEffectVerdictsSurviveRestarts: the determinism scenario's fuse
// commands get effect verdicts — exactly one per command that is not a
// refresh, a unique id each, decided during the run or, for the
// judgements still pending at its end, once event time passes their
// evaluations — and a worker checkpointed while a judgement is pending,
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
	keyed := replay.Route(want.src, replay.RouteConfig{})
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
	// One effect verdict per judged command, exactly: every command that
	// is not a refresh gets one, during the run or — still pending at its
	// end — once event time has passed its evaluations (a heartbeat of
	// every source an hour after the end), and nothing else gets one.
	judged, pendingAtEnd, refreshes := 0, 0, 0
	for p, out := range want.res.Partitions {
		recs := drained(keyed[p], time.Hour)
		all := run(t, want.cfg, int32(p), recs, -1, -1)
		if len(all.Commands) < len(out.Commands) || len(all.Verdicts) < len(out.Verdicts) ||
			!reflect.DeepEqual(all.Commands[:len(out.Commands)], out.Commands) || !reflect.DeepEqual(all.Verdicts[:len(out.Verdicts)], out.Verdicts) {
			t.Fatalf("partition %d: the drained run differs from the uninterrupted one before the drain", p)
		}
		during := effectsByCommand(t, p, out.Verdicts)
		after := effectsByCommand(t, p, all.Verdicts)
		for i := range out.Commands {
			c := &out.Commands[i]
			id := commandID{c.Target, c.Version}
			if isRefresh(c) {
				refreshes++
				if _, ok := after[id]; ok {
					t.Errorf("partition %d: refresh %s v%d got an effect verdict", p, c.Target, c.Version)
				}
				continue
			}
			judged++
			if _, ok := after[id]; !ok {
				t.Errorf("partition %d: command %s %s v%d (issued %v) got no effect verdict, even after the drain", p, c.Action, c.Target, c.Version, time.Unix(0, c.IssuedAtUnixNano).UTC())
			}
			if _, ok := during[id]; !ok {
				pendingAtEnd++
			}
			delete(after, id)
		}
		// What is left judges the commands the drain itself caused
		// (half-opens, closes of the hour after the end), or nothing.
		for _, c := range all.Commands[len(out.Commands):] {
			delete(after, commandID{c.Target, c.Version})
		}
		for id := range after {
			t.Errorf("partition %d: effect verdict for %s v%d, which is no command", p, id.target, id.version)
		}
	}
	if len(ids) != judged-pendingAtEnd {
		t.Fatalf("%d effect verdicts during the run, want %d (%d judged commands, %d still pending at its end)", len(ids), judged-pendingAtEnd, judged, pendingAtEnd)
	}
	t.Logf("%d effect verdicts for %d judged commands (+%d pending at the end, %d refreshes); %d partitions restarted inside a judgement",
		len(ids), judged, pendingAtEnd, refreshes, tested)
}

type commandID struct {
	target  schemas.Key
	version uint64
}

// effectsByCommand maps the effect verdicts to the command each judges
// (target and command_version); a command judged twice fails the test.
func effectsByCommand(t *testing.T, p int, vs []schemas.Verdict) map[commandID]*schemas.Verdict {
	t.Helper()
	m := map[commandID]*schemas.Verdict{}
	for i := range vs {
		v := &vs[i]
		if !isEffect(*v) {
			continue
		}
		n, ok := v.Detail("command_version")
		if !ok {
			t.Fatalf("partition %d: effect verdict %s without command_version", p, v.ID)
		}
		id := commandID{v.Key, uint64(n)}
		if m[id] != nil {
			t.Fatalf("partition %d: command %s v%d judged twice", p, id.target, id.version)
		}
		m[id] = v
	}
	return m
}

// isRefresh: the breaker re-issued its previous command unchanged before
// it expired (schemas.FuseCommand reasons say so).
func isRefresh(c *schemas.FuseCommand) bool {
	return len(c.Reasons) > 0 && strings.HasPrefix(c.Reasons[0].Text, "refresh of the ")
}

// drained is recs followed by a heartbeat of every source they name, d of
// event time after the newest: the watermark passes every pending
// judgement's evaluations.
func drained(recs []engine.KeyedRecord, d time.Duration) []engine.KeyedRecord {
	out := slices.Clone(recs)
	last := map[engine.SourceRef]int64{}
	newest := int64(0)
	topics := ""
	for _, r := range recs {
		src := engine.SourceRef{Topic: r.Source.Topic, Partition: r.Source.Partition}
		last[src] = max(last[src], r.Source.Offset)
		newest = max(newest, r.SourceMaxEventTime)
		topics = r.SourceTopics
	}
	srcs := slices.Collect(maps.Keys(last))
	slices.SortFunc(srcs, func(a, b engine.SourceRef) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, src := range srcs {
		ref := src
		ref.Offset = last[src] + 1
		out = append(out, engine.KeyedRecord{Offset: int64(len(out)), Source: ref, SourceMaxEventTime: newest + int64(d), SourceTopics: topics})
	}
	return out
}
