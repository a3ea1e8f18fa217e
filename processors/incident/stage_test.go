package incident

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

const minute = int64(60e9)

// keysOf makes n keys of tenant t and model m, the first b breaching.
func keysOf(t, m string, n, b int, tripped bool) []schemas.SummaryKey {
	var out []schemas.SummaryKey
	for i := 0; i < n; i++ {
		k := schemas.SummaryKey{Key: schemas.Key{Tenant: t, Service: fmt.Sprintf("s%02d", i), Model: m, Variant: "baseline"}, Status: schemas.StatusOK}
		if i < b {
			k.Status, k.Tripped = schemas.StatusBreach, tripped
		}
		out = append(out, k)
	}
	return out
}

// A boundary is decided only once every partition reached it; a
// partition that skipped it (a later summary, no keys at that boundary)
// counts as done with it; re-sent summaries are duplicates.
func TestStageWaitsForEveryPartition(t *testing.T) {
	st, err := New(Config{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	slow := func(p int32, at int64) schemas.EvalSummary {
		// Partition p holds tenant t<p> with 4 keys of model m, all breaching.
		return schemas.EvalSummary{SLO: "lat", Processor: "tail", AtUnixNano: at, Partition: p,
			Keys: append(keysOf(fmt.Sprint("t", p), "m", 4, 4, false), keysOf(fmt.Sprint("t", p), "other", 8, 0, false)...)}
	}
	add := func(s schemas.EvalSummary) []schemas.Incident {
		t.Helper()
		out, err := st.Add(s)
		if err != nil {
			t.Fatal(err)
		}
		return out.Incidents
	}
	for at := int64(1); at <= 2; at++ {
		add(slow(0, at*minute))
		add(slow(1, at*minute))
	}
	if st.Stats().Decided != 0 {
		t.Fatalf("decided %d boundaries before partition 2 said anything", st.Stats().Decided)
	}
	// Partition 2 jumped to boundary 2: it had nothing at 1.
	out := add(schemas.EvalSummary{SLO: "lat", AtUnixNano: 2 * minute, Partition: 2})
	if st.Stats().Decided != 2 || len(out) != 1 || out[0].Status != schemas.IncidentOpened || out[0].Dimension != "model" || out[0].Value != "m" {
		t.Fatalf("after partition 2's boundary 2: decided %d, records %+v", st.Stats().Decided, out)
	}
	if out[0].Breaching != 8 || out[0].Healthy != 0 || out[0].OtherHealthy != 16 || out[0].FirstUnixNano != 2*minute {
		t.Errorf("record %+v", out[0])
	}
	if got := add(slow(0, 2*minute)); got != nil || st.Stats().Duplicates != 1 {
		t.Errorf("a re-sent summary gave %v, duplicates %d", got, st.Stats().Duplicates)
	}
	if _, err := st.Add(schemas.EvalSummary{SLO: "lat", Partition: 3}); err == nil {
		t.Error("a summary of partition 3 of 3 was taken")
	}
	// Three boundaries without breaches close it.
	var last []schemas.Incident
	for at := int64(3); at <= 5; at++ {
		for p := int32(0); p < 3; p++ {
			last = append(last, add(schemas.EvalSummary{SLO: "lat", AtUnixNano: at * minute, Partition: p, Keys: keysOf(fmt.Sprint("t", p), "m", 4, 0, false)})...)
		}
	}
	var statuses []schemas.IncidentStatus
	for _, r := range last {
		statuses = append(statuses, r.Status)
	}
	if fmt.Sprint(statuses) != "[resolving resolving closed]" {
		t.Errorf("statuses %v", statuses)
	}
}

// Breaches spread over values (one per model) open nothing; a lone
// tripped key opens a key incident; 2 breaching keys of one value among
// many are not attributed when not significant.
func TestStageAttributesOnlyConcentrations(t *testing.T) {
	st, _ := New(Config{Partitions: 1})
	var keys []schemas.SummaryKey
	for m := 0; m < 10; m++ {
		ks := keysOf("t", fmt.Sprint("m", m), 6, 0, false)
		ks[m%6].Status = schemas.StatusBreach // one breach per model, spread over services
		keys = append(keys, ks...)
	}
	for at := int64(1); at <= 4; at++ {
		out, _ := st.Add(schemas.EvalSummary{SLO: "lat", AtUnixNano: at * minute, Keys: keys})
		if len(out.Incidents) != 0 {
			t.Fatalf("scattered breaches opened %+v", out)
		}
	}
	one := keysOf("t", "m", 20, 1, true)
	res, _ := st.Add(schemas.EvalSummary{SLO: "lat", AtUnixNano: 5 * minute, Keys: one})
	out := res.Incidents
	if len(out) != 1 || out[0].Dimension != schemas.DimKey || out[0].Value != one[0].Key.String() || out[0].PValue != 1 {
		t.Fatalf("a lone tripped key: %+v", out)
	}
}

func TestStageConfigAndSnapshotErrors(t *testing.T) {
	for _, c := range []Config{{}, {Partitions: 1, Alpha: 2}, {Partitions: 1, MinKeys: 1}, {Partitions: 1, MinPurity: 1.5}, {Partitions: 1, OpenAfter: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	st, _ := New(Config{Partitions: 2})
	snap, _ := st.MarshalBinary()
	other, _ := New(Config{Partitions: 3})
	if err := other.UnmarshalBinary(snap); !errors.Is(err, ErrSnapshot) {
		t.Errorf("a 2-partition snapshot into 3 partitions: %v", err)
	}
	if err := st.UnmarshalBinary([]byte(`{"format":"x"}`)); !errors.Is(err, ErrSnapshot) {
		t.Errorf("a foreign format: %v", err)
	}
}

// One noise breach beside a concentrated one does not widen the
// attribution: a bad canary (12 keys) and one breaching baseline key stay
// model,variant=x,canary (not model=x, 13 of 24, which would trip 11
// healthy baselines); a slow model x (24 keys) and one breaching key of
// model y stay model=x (not the provider of both).
func TestNoiseDoesNotWidenTheAttribution(t *testing.T) {
	mk := func(model, variant string, n, b int) []schemas.SummaryKey {
		var out []schemas.SummaryKey
		for i := 0; i < n; i++ {
			k := schemas.SummaryKey{Key: schemas.Key{Tenant: fmt.Sprintf("t%02d", i), Service: "chat", Model: model, Variant: variant}, Status: schemas.StatusOK}
			if i < b {
				k.Status = schemas.StatusBreach
			}
			out = append(out, k)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		keys []schemas.SummaryKey
		want string
	}{
		{"canary and a baseline", concat(mk("x", "canary", 12, 12), mk("x", "baseline", 12, 1), mk("z", "canary", 12, 0), mk("z", "baseline", 12, 0)), "model,variant=x,canary"},
		{"model and a key of another", concat(mk("x", "baseline", 24, 24), mk("y", "baseline", 24, 1), mk("z", "baseline", 24, 0)), "model=x"},
		{"canary and three baselines", concat(mk("x", "canary", 12, 12), mk("x", "baseline", 12, 3), mk("z", "canary", 12, 0), mk("z", "baseline", 12, 0)), "model,variant=x,canary"},
		{"canary alone", concat(mk("x", "canary", 12, 12), mk("x", "baseline", 12, 0), mk("z", "canary", 12, 0), mk("z", "baseline", 12, 0)), "model,variant=x,canary"},
		{"the whole model", concat(mk("x", "canary", 12, 12), mk("x", "baseline", 12, 10), mk("z", "canary", 12, 0), mk("z", "baseline", 12, 0)), "model=x"},
	} {
		st, _ := New(Config{Partitions: 1, Providers: map[string]string{"x": "p", "y": "p", "z": "q"}})
		atts := st.attribute(tc.keys)
		if len(atts) != 1 || atts[0].name() != tc.want {
			var got []string
			for _, a := range atts {
				got = append(got, a.name())
			}
			t.Errorf("%s: attributed %v, want [%s]", tc.name, got, tc.want)
		}
	}
}

func concat(xs ...[]schemas.SummaryKey) []schemas.SummaryKey {
	var out []schemas.SummaryKey
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

// A keyed partition that stops sending (stuck, restoring, or without the
// SLO) does not hold the stage forever: after max_wait undecided
// boundaries the oldest is decided without it, its records are marked
// partial and Lagging names it; the level command goes out; its late
// summaries are not judged but their commands go through.
func TestLaggingPartitionDoesNotBlindTheStage(t *testing.T) {
	st, _ := New(Config{Partitions: 3, MaxWait: 3, Commands: []CommandRule{{SLO: "lat"}}})
	sum := func(p int32, at int64, bad bool, cmds ...schemas.FuseCommand) schemas.EvalSummary {
		n := 0
		if bad {
			n = 4
		}
		return schemas.EvalSummary{SLO: "lat", Processor: "tail", AtUnixNano: at * minute, Partition: p,
			Keys: append(keysOf(fmt.Sprint("t", p), "m", 4, n, false), keysOf(fmt.Sprint("t", p), "other", 8, 0, false)...), Commands: cmds}
	}
	var out schemas.Output
	add := func(s schemas.EvalSummary) {
		t.Helper()
		o, err := st.Add(s)
		if err != nil {
			t.Fatal(err)
		}
		out.Incidents = append(out.Incidents, o.Incidents...)
		out.Commands = append(out.Commands, o.Commands...)
	}
	add(sum(2, 1, false)) // partition 2 says boundary 1, then nothing
	for at := int64(1); at <= 8; at++ {
		add(sum(0, at, true))
		add(sum(1, at, true))
	}
	if st.Stats().Partial == 0 || len(st.slos["lat"].Pending) > 3 {
		t.Fatalf("partial decisions %d, pending %d: the stage waits for partition 2", st.Stats().Partial, len(st.slos["lat"].Pending))
	}
	lag := st.Lagging()
	if len(lag) == 0 || !strings.Contains(lag[0], "[2]") {
		t.Fatalf("Lagging %v does not name partition 2", lag)
	}
	var opened *schemas.Incident
	for i := range out.Incidents {
		if out.Incidents[i].Status == schemas.IncidentOpened {
			opened = &out.Incidents[i]
		}
	}
	if opened == nil || opened.Value != "m" || !opened.Partial {
		t.Fatalf("no partial model=m incident: %+v", out.Incidents)
	}
	if len(out.Commands) != 1 || out.Commands[0].Target.Model != "m" || out.Commands[0].Target.Tenant != "*" {
		t.Fatalf("commands %+v, want the level's", out.Commands)
	}
	// Partition 2 comes back: its summaries of decided boundaries are
	// late; a trip of one of its keys not covered (model other) goes out.
	other := schemas.FuseCommand{Target: schemas.Key{Tenant: "t2", Service: "s00", Model: "other", Variant: "baseline"}, Action: schemas.ActionTrip,
		Level: 2, State: schemas.StateOpen, Version: 1, IssuedAtUnixNano: 2 * minute, ExpiresAtUnixNano: 20 * minute,
		Reasons: []schemas.Reason{{VerdictID: "v", Text: "t"}}, CorrelationIDs: []string{"b", "slo:lat"}}
	out = schemas.Output{}
	add(sum(2, 2, false, other))
	if st.Stats().Late != 1 || len(out.Commands) != 1 || out.Commands[0].Target != other.Target || len(out.Incidents) != 0 {
		t.Fatalf("late summary: late %d, out %+v", st.Stats().Late, out)
	}
}
