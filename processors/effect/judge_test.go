package effect_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/schemas"
)

const (
	minute = int64(time.Minute)
	t0     = int64(1_800_000_000) * int64(time.Second) // a multiple of a minute
)

var (
	failing  = schemas.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "stable"}
	fallback = schemas.Key{Tenant: "acme", Service: "chat", Model: "small", Variant: "stable"}
	other    = schemas.Key{Tenant: "acme", Service: "search", Model: "big", Variant: "stable"}
)

// verdict is a tail verdict of SLO "latency" for key at window end end.
func verdict(key schemas.Key, end int64, st schemas.Status, value float64, n int64) schemas.Verdict {
	return schemas.Verdict{
		ID: schemas.VerdictID("tail", "latency", "duration_ms_p999", key, end, "v1"), Processor: "tail", SLO: "latency", Metric: "duration_ms_p999",
		Key: key, WindowStartUnixNano: end - 5*minute, WindowEndUnixNano: end, Value: value, Threshold: 3000, Status: st, N: n, Method: "gpd_mle_profile",
	}
}

func command(target schemas.Key, a schemas.Action, st schemas.BreakerState, version uint64, at int64, reasons ...schemas.Verdict) schemas.FuseCommand {
	c := schemas.FuseCommand{Target: target, Action: a, State: st, Version: version, IssuedAtUnixNano: at, ExpiresAtUnixNano: at + 15*minute,
		Level: 2, CorrelationIDs: []string{"incident-1"}}
	if a == schemas.ActionClose {
		c.Level = 0
	}
	for _, r := range reasons {
		c.Reasons = append(c.Reasons, schemas.Reason{VerdictID: r.ID, Text: "x"})
	}
	return c
}

// step is one evaluation boundary: its verdicts and commands.
type step struct {
	at       int64
	verdicts []schemas.Verdict
	cmds     []schemas.FuseCommand
}

func newJudge(t *testing.T, n int) *effect.Judge {
	t.Helper()
	cfg := effect.DefaultConfig()
	cfg.Evaluations = n
	j, err := effect.New(cfg, "v1", map[string]time.Duration{"latency": time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func run(j *effect.Judge, steps []step) []schemas.Verdict {
	var out []schemas.Verdict
	for _, s := range steps {
		out = append(out, j.Evaluate(s.at, s.verdicts, s.cmds)...)
	}
	return out
}

func detail(v schemas.Verdict, name string) float64 {
	x, ok := v.Detail(name)
	if !ok {
		panic("no detail " + name)
	}
	return x
}

// tripped is a trip of failing at t0 caused by a breach of 9000 ms.
func tripped(action schemas.Action, target schemas.Key) step {
	cause := verdict(failing, t0, schemas.StatusBreach, 9000, 500)
	return step{at: t0, verdicts: []schemas.Verdict{cause}, cmds: []schemas.FuseCommand{command(target, action, schemas.StateOpen, 7, t0, cause)}}
}

// after returns the evaluation boundary k minutes after t0 with the
// given verdicts.
func after(k int64, vs ...func(end int64) schemas.Verdict) step {
	s := step{at: t0 + k*minute}
	for _, f := range vs {
		s.verdicts = append(s.verdicts, f(s.at))
	}
	return s
}

func v(key schemas.Key, st schemas.Status, value float64, n int64) func(int64) schemas.Verdict {
	return func(end int64) schemas.Verdict { return verdict(key, end, st, value, n) }
}

func TestJudge(t *testing.T) {
	breach, warn, ok, insuf := schemas.StatusBreach, schemas.StatusWarn, schemas.StatusOK, schemas.StatusInsufficientData
	type want struct {
		method      string
		status      schemas.Status
		at          int64 // minutes after t0
		before      float64
		after       float64
		evaluations float64
		traffic     float64
		superseded  float64
	}
	cases := []struct {
		name  string
		n     int
		steps []step
		want  []want
	}{
		{
			name: "degrade recovers at evaluation 3 on the users' traffic (fallback ok, failing key drained)",
			n:    5,
			steps: []step{
				tripped(schemas.ActionDegrade, failing),
				after(1, v(failing, breach, 8000, 300), v(fallback, ok, 900, 200)),
				after(2, v(failing, warn, 3500, 100), v(fallback, ok, 950, 400)),
				after(3, v(failing, insuf, 0, 3), v(fallback, ok, 1000, 500), v(other, breach, 9999, 900)),
				after(4, v(fallback, breach, 7000, 500)), // after the decision: not judged
			},
			want: []want{{"degrade:recovered", ok, 3, 9000, 1000, 3, 3, 0}},
		},
		{
			name: "trip not recovered within 4: the gateway ignored it, the failing key keeps breaching",
			n:    4,
			steps: []step{
				tripped(schemas.ActionTrip, failing),
				after(1, v(failing, breach, 8000, 300), v(fallback, ok, 900, 200)),
				after(2, v(failing, breach, 8100, 300)),
				after(3), // no verdict in scope: no traffic this evaluation
				after(4, v(failing, breach, 8200, 300), v(fallback, ok, 900, 200)),
				after(5, v(failing, ok, 100, 300)),
			},
			want: []want{{"trip:not_recovered", breach, 4, 9000, 8200, 4, 3, 0}},
		},
		{
			name: "throttle judges the target only: the fallback's ok does not count",
			n:    2,
			steps: []step{
				tripped(schemas.ActionThrottle, failing),
				after(1, v(failing, breach, 8000, 300), v(fallback, ok, 900, 200)),
				after(2, v(failing, breach, 7000, 300), v(fallback, ok, 900, 200)),
			},
			want: []want{{"throttle:not_recovered", breach, 2, 9000, 7000, 2, 2, 0}},
		},
		{
			name: "target removed: no traffic in the scope for 3 evaluations",
			n:    3,
			steps: []step{
				tripped(schemas.ActionTrip, failing),
				after(1, v(other, breach, 8000, 300)),
				after(2, v(failing, insuf, 0, 2)),
				after(3),
			},
			want: []want{{"trip:no_traffic", insuf, 3, 9000, 0, 3, 0, 0}},
		},
		{
			name: "boundaries the engine jumped over count as evaluations without traffic",
			n:    5,
			steps: []step{
				tripped(schemas.ActionDegrade, failing),
				after(1, v(failing, breach, 8000, 300)),
				after(9, v(fallback, ok, 900, 200)), // evaluations 2..8 jumped (no state anywhere)
			},
			want: []want{{"degrade:not_recovered", breach, 9, 9000, 8000, 5, 1, 0}},
		},
		{
			name: "superseded: an escalation to trip before the degrade was judged",
			n:    10,
			steps: func() []step {
				s := tripped(schemas.ActionDegrade, failing)
				esc := verdict(failing, t0+2*minute, breach, 12000, 300)
				return []step{s,
					after(1, v(failing, breach, 11000, 300)),
					{at: t0 + 2*minute, verdicts: []schemas.Verdict{esc}, cmds: []schemas.FuseCommand{command(failing, schemas.ActionTrip, schemas.StateOpen, 8, t0+2*minute, esc)}},
					after(3, v(failing, ok, 500, 300)),
				}
			}(),
			want: []want{
				// The degrade's evaluation 2 (the escalating breach) is
				// taken before the trip supersedes it.
				{"degrade:superseded", insuf, 2, 9000, 12000, 2, 2, 8},
				{"trip:recovered", ok, 3, 12000, 500, 1, 1, 0},
			},
		},
		{
			name: "a refresh is not judged: the trip's judgement goes on",
			n:    3,
			steps: []step{
				tripped(schemas.ActionTrip, failing),
				after(1, v(failing, breach, 8000, 300)),
				{at: t0 + 2*minute, verdicts: []schemas.Verdict{verdict(failing, t0+2*minute, breach, 7000, 300)},
					cmds: []schemas.FuseCommand{command(failing, schemas.ActionTrip, schemas.StateOpen, 8, t0+2*minute, verdict(failing, t0, breach, 9000, 500))}},
				after(3, v(fallback, ok, 800, 900)),
			},
			want: []want{{"trip:recovered", ok, 3, 9000, 800, 3, 3, 0}},
		},
		{
			name: "a half-open inherits the trip's signal; the probe recovers on the target",
			n:    3,
			steps: []step{
				tripped(schemas.ActionTrip, failing),
				after(1, v(failing, breach, 8000, 300), v(fallback, ok, 800, 900)),
				after(2, v(failing, breach, 6000, 30), v(fallback, ok, 800, 900)),
				after(3, v(failing, insuf, 0, 1), v(fallback, ok, 800, 900)), // the trip: evaluation 3 recovered
				{at: t0 + 5*minute, cmds: []schemas.FuseCommand{command(failing, schemas.ActionHalfOpen, schemas.StateHalfOpen, 8, t0+5*minute, verdict(failing, t0, breach, 9000, 500))}},
				after(6, v(failing, warn, 3100, 20), v(fallback, ok, 800, 900)),
				after(7, v(failing, ok, 900, 40)),
			},
			want: []want{
				{"trip:recovered", ok, 3, 9000, 800, 3, 3, 0},
				{"half_open:recovered", ok, 7, 6000, 900, 2, 2, 0},
			},
		},
		{
			name: "a half-open does not end the trip's judgement: both are judged, each on its scope",
			n:    10,
			steps: []step{
				tripped(schemas.ActionTrip, failing),
				after(1, v(failing, breach, 8000, 300), v(fallback, ok, 800, 900)),
				{at: t0 + 2*minute, verdicts: []schemas.Verdict{verdict(failing, t0+2*minute, breach, 7000, 40)},
					cmds: []schemas.FuseCommand{command(failing, schemas.ActionHalfOpen, schemas.StateHalfOpen, 8, t0+2*minute, verdict(failing, t0, breach, 9000, 500))}},
				after(3, v(failing, breach, 6000, 30), v(fallback, ok, 800, 900)),
				after(4, v(failing, ok, 900, 30), v(fallback, ok, 800, 900)),
			},
			want: []want{
				{"trip:recovered", ok, 4, 9000, 800, 4, 4, 0},
				{"half_open:recovered", ok, 4, 7000, 900, 2, 2, 0},
			},
		},
		{
			name: "a degrade in state half_open is judged as a probe, on the target, beside the degrade",
			n:    10,
			steps: func() []step {
				ho := command(failing, schemas.ActionDegrade, schemas.StateHalfOpen, 8, t0+2*minute, verdict(failing, t0, breach, 9000, 500))
				ho.Fallback = "small"
				s := tripped(schemas.ActionDegrade, failing)
				s.cmds[0].Fallback = "small"
				return []step{s,
					after(1, v(failing, breach, 8000, 300), v(fallback, breach, 7000, 900)),
					{at: t0 + 2*minute, cmds: []schemas.FuseCommand{ho}},
					after(3, v(failing, ok, 900, 30), v(fallback, warn, 3100, 900)),
					after(4, v(failing, ok, 900, 30), v(fallback, ok, 800, 900)),
				}
			}(),
			want: []want{
				{"half_open:recovered", ok, 3, 8000, 900, 1, 1, 0},
				{"degrade:recovered", ok, 4, 9000, 800, 4, 3, 0},
			},
		},
		{
			name: "a re-trip ends the pending trip and half-open; a close ends the pending trip",
			n:    10,
			steps: func() []step {
				retrip := verdict(failing, t0+3*minute, breach, 8000, 30)
				okv := verdict(failing, t0+9*minute, ok, 900, 30)
				return []step{
					tripped(schemas.ActionTrip, failing),
					{at: t0 + 2*minute, cmds: []schemas.FuseCommand{command(failing, schemas.ActionHalfOpen, schemas.StateHalfOpen, 8, t0+2*minute, verdict(failing, t0, breach, 9000, 500))}},
					{at: t0 + 3*minute, verdicts: []schemas.Verdict{retrip}, cmds: []schemas.FuseCommand{command(failing, schemas.ActionTrip, schemas.StateOpen, 9, t0+3*minute, retrip)}},
					{at: t0 + 9*minute, verdicts: []schemas.Verdict{okv, verdict(fallback, t0+9*minute, warn, 3100, 900)},
						cmds: []schemas.FuseCommand{command(failing, schemas.ActionClose, schemas.StateClosed, 10, t0+9*minute, okv)}},
					after(10, v(failing, ok, 950, 30)),
				}
			}(),
			want: []want{
				{"trip:superseded", insuf, 3, 9000, 8000, 3, 1, 9},
				{"half_open:superseded", insuf, 3, 9000, 8000, 1, 1, 9},
				{"trip:superseded", insuf, 9, 8000, 3100, 6, 1, 10},
			},
		},
		{
			name: "a close holds for N evaluations without a breach (warn allowed)",
			n:    3,
			steps: func() []step {
				okv := verdict(failing, t0, ok, 800, 300)
				return []step{
					{at: t0, verdicts: []schemas.Verdict{okv}, cmds: []schemas.FuseCommand{command(failing, schemas.ActionClose, schemas.StateClosed, 9, t0, okv)}},
					after(1, v(failing, ok, 900, 300)),
					after(2, v(failing, warn, 3100, 300)),
					after(3, v(failing, ok, 1000, 300)),
				}
			}(),
			want: []want{{"close:held", ok, 3, 800, 1000, 3, 3, 0}},
		},
		{
			name: "a close relapses at the first breach",
			n:    5,
			steps: func() []step {
				okv := verdict(failing, t0, ok, 800, 300)
				return []step{
					{at: t0, verdicts: []schemas.Verdict{okv}, cmds: []schemas.FuseCommand{command(failing, schemas.ActionClose, schemas.StateClosed, 9, t0, okv)}},
					after(1, v(failing, ok, 900, 300)),
					after(2, v(failing, breach, 5000, 300)),
				}
			}(),
			want: []want{{"close:relapsed", breach, 2, 800, 5000, 2, 2, 0}},
		},
		{
			name: "a command whose cause is unknown is decided at once",
			n:    3,
			steps: []step{
				{at: t0, cmds: []schemas.FuseCommand{command(failing, schemas.ActionHalfOpen, schemas.StateHalfOpen, 9, t0, verdict(failing, t0-10*minute, breach, 9000, 1))}},
			},
			want: []want{{"half_open:unknown_cause", insuf, 0, 0, 0, 0, 0, 0}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := run(newJudge(t, c.n), c.steps)
			if len(got) != len(c.want) {
				t.Fatalf("%d effect verdicts, want %d: %s", len(got), len(c.want), show(got))
			}
			for i, w := range c.want {
				g := got[i]
				if err := g.Validate(); err != nil {
					t.Errorf("verdict %d invalid: %v", i, err)
				}
				gw := want{g.Method, g.Status, (g.WindowEndUnixNano - t0) / minute, detail(g, "before"), detail(g, "after"),
					detail(g, "evaluations"), detail(g, "evaluations_with_traffic"), detail(g, "superseded_by")}
				if gw != w {
					t.Errorf("verdict %d = %+v, want %+v", i, gw, w)
				}
				if g.Processor != effect.Name || g.Key != failing || detail(g, "max_evaluations") != float64(c.n) {
					t.Errorf("verdict %d: processor %q key %v max_evaluations %v", i, g.Processor, g.Key, detail(g, "max_evaluations"))
				}
				wantRecovered := 0.0
				if g.Status == ok {
					wantRecovered = 1
				}
				if as := detail(g, "after_status"); (g.Status == ok && as != 1) || (g.Status == breach && as < 2) || (detail(g, "evaluations_with_traffic") == 0) != (as == 0) {
					t.Errorf("verdict %d: after_status %v with status %s", i, as, g.Status)
				}
				if detail(g, "recovered") != wantRecovered {
					t.Errorf("verdict %d: recovered %v with status %s", i, detail(g, "recovered"), g.Status)
				}
				if g.Status == insuf && (g.Value != 0 || g.N != 0) {
					t.Errorf("verdict %d: insufficient_data with value %v n %d", i, g.Value, g.N)
				}
			}
		})
	}
}

func show(vs []schemas.Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  %s at +%dm before=%v after=%v evals=%v", v.Method, (v.WindowEndUnixNano-t0)/minute, detail(v, "before"), detail(v, "after"), detail(v, "evaluations"))
	}
	return b.String()
}

// TestSameBoundaryOrder: a scale_out and its half-open (the breaker keeps
// the action scale_out while it probes) decided at one boundary come out
// in one order, the open command's first, however the judge's map
// iterates.
func TestSameBoundaryOrder(t *testing.T) {
	ok := schemas.StatusOK
	s := tripped(schemas.ActionScaleOut, failing)
	ho := command(failing, schemas.ActionScaleOut, schemas.StateHalfOpen, 8, t0+minute, verdict(failing, t0, schemas.StatusBreach, 9000, 500))
	steps := []step{s, {at: t0 + minute, cmds: []schemas.FuseCommand{ho}}, after(2, v(failing, ok, 100, 50))}
	for i := 0; i < 50; i++ {
		got := run(newJudge(t, 5), steps)
		if len(got) != 2 || got[0].Method != "scale_out:recovered" || got[1].Method != "half_open:recovered" {
			t.Fatalf("run %d: %s, want scale_out:recovered then half_open:recovered", i, show(got))
		}
	}
}

// TestIDIsPerCommand: one id per (target, version); the same run twice
// gives the same verdicts; another version another id.
func TestIDIsPerCommand(t *testing.T) {
	ok := schemas.StatusOK
	steps := []step{tripped(schemas.ActionDegrade, failing), after(1, v(fallback, ok, 1, 1))}
	a, b := run(newJudge(t, 3), steps), run(newJudge(t, 3), steps)
	if fmt.Sprint(a) != fmt.Sprint(b) || len(a) != 1 {
		t.Fatalf("two runs differ or no verdict: %v / %v", a, b)
	}
	if want := schemas.VerdictID(effect.Name, "latency", "duration_ms_p999", failing, 7, "v1"); a[0].ID != want {
		t.Fatalf("id %s, want %s", a[0].ID, want)
	}
	steps[0].cmds[0].Version = 8
	if c := run(newJudge(t, 3), steps); c[0].ID == a[0].ID {
		t.Fatal("another command version, same id")
	}
}

// TestSnapshotContinues: a judge restored from a snapshot taken at any
// step gives the same verdicts as the uninterrupted one; a bad snapshot
// leaves the judge as it was.
func TestSnapshotContinues(t *testing.T) {
	breach, ok := schemas.StatusBreach, schemas.StatusOK
	steps := []step{
		tripped(schemas.ActionDegrade, failing),
		after(1, v(failing, breach, 8000, 300)),
		after(2, v(failing, breach, 7000, 300)),
		after(3, v(fallback, ok, 700, 300)),
	}
	want := run(newJudge(t, 5), steps)
	if len(want) != 1 {
		t.Fatalf("want 1 verdict, got %s", show(want))
	}
	for cut := 0; cut <= len(steps); cut++ {
		j := newJudge(t, 5)
		got := run(j, steps[:cut])
		snap, err := j.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		again, _ := j.MarshalBinary()
		if !bytes.Equal(snap, again) {
			t.Fatal("two snapshots of one state differ")
		}
		r := newJudge(t, 5)
		if err := r.UnmarshalBinary(snap); err != nil {
			t.Fatal(err)
		}
		got = append(got, run(r, steps[cut:])...)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("cut at %d: %s, want %s", cut, show(got), show(want))
		}
	}
	j := newJudge(t, 5)
	run(j, steps[:2])
	before, _ := j.MarshalBinary()
	for _, bad := range []string{"{", `{"format":"other"}`, `{"format":"fusebox.effect.state.v1","judgements":[null]}`, `{"format":"fusebox.effect.state.v1","x":1}`} {
		if err := j.UnmarshalBinary([]byte(bad)); !errors.Is(err, effect.ErrSnapshot) {
			t.Errorf("%s: %v, want ErrSnapshot", bad, err)
		}
	}
	if after, _ := j.MarshalBinary(); !bytes.Equal(before, after) {
		t.Error("a failed restore changed the state")
	}
}

// TestSLORemoved: a judgement of an SLO the restored judge does not run
// ends slo_removed.
func TestSLORemoved(t *testing.T) {
	j := newJudge(t, 5)
	run(j, []step{tripped(schemas.ActionTrip, failing)})
	snap, _ := j.MarshalBinary()
	r, err := effect.New(effect.DefaultConfig(), "v1", map[string]time.Duration{"other": time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	got := run(r, []step{after(1)})
	if len(got) != 1 || got[0].Method != "trip:slo_removed" || got[0].Status != schemas.StatusInsufficientData {
		t.Fatalf("got %s", show(got))
	}
	if s := r.Stats(); s.Pending != 0 || s.Verdicts != 1 || s.Undecided != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestMaxTargetsAndEviction(t *testing.T) {
	cfg := effect.DefaultConfig()
	cfg.MaxTargets, cfg.Evaluations, cfg.EvictAfter = 1, 2, time.Hour
	j, err := effect.New(cfg, "v1", map[string]time.Duration{"latency": time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cause := verdict(fallback, t0, schemas.StatusBreach, 9000, 500)
	s := tripped(schemas.ActionTrip, failing)
	s.verdicts = append(s.verdicts, cause)
	s.cmds = append(s.cmds, command(fallback, schemas.ActionTrip, schemas.StateOpen, 3, t0, cause))
	run(j, []step{s, after(1), after(2)})
	if st := j.Stats(); st.TargetOverflow != 1 || st.Verdicts != 1 || st.Commands != 2 {
		t.Fatalf("stats %+v, want one overflow and one verdict", st)
	}
	run(j, []step{after(61)})
	if st := j.Stats(); st.Evictions != 1 {
		t.Fatalf("stats %+v, want the decided target evicted after an hour", st)
	}
}

func TestConfigValidate(t *testing.T) {
	c := effect.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Evaluations, c.MaxTargets, c.EvictAfter = 0, 0, 0
	err := c.Validate()
	for _, f := range []string{"evaluations: must be in [1, 1000], got 0", "max_targets", "evict_after"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate() = %v, want it to name %q", err, f)
		}
	}
	var fe *schemas.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("%v is not a *schemas.FieldError", err)
	}
	if _, err := effect.New(effect.DefaultConfig(), "v", map[string]time.Duration{"x": 0}); !errors.Is(err, effect.ErrNoInterval) {
		t.Errorf("New with a zero interval: %v", err)
	}
}

func TestScope(t *testing.T) {
	for a, want := range map[schemas.Action]string{
		schemas.ActionTrip: "acme/chat/*/*", schemas.ActionDegrade: "acme/chat/*/*", schemas.ActionRollback: "acme/chat/big/*",
		schemas.ActionThrottle: "acme/chat/big/stable", schemas.ActionScaleOut: "acme/chat/big/stable",
		schemas.ActionHalfOpen: "acme/chat/big/stable", schemas.ActionClose: "acme/chat/big/stable",
	} {
		if got := effect.Scope(a, failing).String(); got != want {
			t.Errorf("Scope(%s) = %s, want %s", a, got, want)
		}
	}
}
