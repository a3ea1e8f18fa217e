package breaker

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// step is one Observe (v set) or Advance (at m minutes) and the command it
// must produce.
type step struct {
	v    *schemas.Verdict
	adv  float64
	want *want
}

func obs(m float64, st schemas.Status, w *want) step {
	v := tail(m, st)
	return step{v: &v, want: w}
}

func adv(m float64, w *want) step { return step{adv: m, want: w} }

// obsN observes the same status at minutes from, from+1, ..., from+n-1,
// expecting no command.
func obsN(from float64, n int, st schemas.Status) []step {
	var out []step
	for i := 0; i < n; i++ {
		out = append(out, obs(from+float64(i), st, nil))
	}
	return out
}

func seq(parts ...any) []step {
	var out []step
	for _, p := range parts {
		switch x := p.(type) {
		case step:
			out = append(out, x)
		case []step:
			out = append(out, x...)
		}
	}
	return out
}

var (
	tripL2     = &want{schemas.ActionTrip, schemas.StateOpen, 2}
	halfOpenL2 = &want{schemas.ActionHalfOpen, schemas.StateHalfOpen, 2}
	closed     = &want{schemas.ActionClose, schemas.StateClosed, 0}
	degradeL1  = &want{schemas.ActionDegrade, schemas.StateOpen, 1}
)

func TestTransitions(t *testing.T) {
	trip := Rule{Processor: "tail", Action: schemas.ActionTrip}
	kn := func(k, n int) Rule { r := trip; r.K, r.N = k, n; return r }
	cases := []struct {
		name  string
		rules []Rule
		steps []step
	}{
		{"closed to open after k of n", []Rule{trip}, seq(
			obs(1, B, nil), obs(2, B, nil), obs(3, B, tripL2))},
		{"k of n with healthy evaluations between", []Rule{trip}, seq(
			obs(1, B, nil), obsN(2, 7, O), obs(9, B, nil), obs(10, B, tripL2))},
		{"a breach older than n evaluations no longer counts", []Rule{trip}, seq(
			obs(1, B, nil), obsN(2, 8, O), obs(10, B, nil), obs(11, B, nil), obs(12, B, tripL2))},
		{"warn is not a breach", []Rule{kn(3, 3)}, seq(
			obs(1, B, nil), obs(2, W, nil), obs(3, B, nil), obs(4, B, nil), obs(5, B, tripL2))},
		{"insufficient_data takes no slot of n", []Rule{kn(3, 3)}, seq(
			obs(1, B, nil), obs(2, I, nil), obs(3, I, nil), obs(4, B, nil), obs(5, B, tripL2))},
		{"k = 1 trips on the first breach", []Rule{kn(1, 10)}, seq(
			obs(1, B, tripL2))},
		{"k = n needs n breaches in a row", []Rule{kn(3, 3)}, seq(
			obs(1, B, nil), obs(2, B, nil), obs(3, O, nil), obs(4, B, nil), obs(5, B, nil), obs(6, B, tripL2))},
		{"a repeated verdict counts once", []Rule{trip}, seq(
			obs(1, B, nil), obs(1, B, nil), obs(1, B, nil), obs(2, B, nil), obs(3, B, tripL2))},
		{"a late verdict is ignored", []Rule{trip}, seq(
			obs(1, B, nil), obs(5, B, nil), obs(3, B, nil), obs(6, B, tripL2))},
		{"open to half-open when the cool-down ends (Advance)", []Rule{trip}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), adv(7.99, nil), adv(8, halfOpenL2))},
		{"open to half-open when the cool-down ends (Observe)", []Rule{trip}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), obs(7, O, nil), obs(8, O, halfOpenL2))},
		{"ok and breach while open change nothing", []Rule{trip}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), obs(4, O, nil), obs(5, B, nil), obs(6, B, nil), obs(7, B, nil))},
		{"half-open to closed after close_after ok", []Rule{trip}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), adv(8, halfOpenL2), obs(9, O, nil), obs(10, O, nil), obs(11, O, closed))},
		{"warn resets the healthy streak", []Rule{trip}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), adv(8, halfOpenL2), obs(9, O, nil), obs(10, O, nil), obs(11, W, nil),
			obs(12, O, nil), obs(13, O, nil), obs(14, O, closed))},
		{"insufficient_data does not break the streak", []Rule{trip}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), adv(8, halfOpenL2), obs(9, O, nil), obs(10, I, nil), obs(11, O, nil), obs(12, O, closed))},
		{"half-open to open on one breach, cool-down doubled", []Rule{trip}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), adv(8, halfOpenL2), obs(9, B, tripL2), adv(16, nil), adv(18.99, tripL2 /* a refresh */), adv(19, halfOpenL2))},
		{"after a close the old breaches are forgotten", []Rule{trip}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), adv(8, halfOpenL2), obsN(9, 3, O)[:2], obs(11, O, closed),
			obs(12, B, nil), obs(13, B, nil), obs(14, B, tripL2))},
		{"escalation: degrade at 3 of 10, trip at 6 of 10", []Rule{
			{Processor: "tail", Action: schemas.ActionDegrade, Fallback: "small"},
			{Processor: "tail", Action: schemas.ActionTrip, K: 6}}, seq(
			obsN(1, 2, B), obs(3, B, degradeL1), obsN(4, 2, B), obs(6, B, tripL2))},
		{"a lower-level rule cannot act while open", []Rule{
			{Processor: "tail", Action: schemas.ActionTrip},
			{Processor: "tail", Action: schemas.ActionDegrade, Fallback: "small", K: 1}}, seq(
			obs(1, B, degradeL1), obsN(2, 1, B), obs(3, B, tripL2), obsN(4, 3, B))},
		{"highest level wins when rules trip together", []Rule{
			{Processor: "tail", Action: schemas.ActionDegrade, Fallback: "small"},
			{Processor: "tail", Action: schemas.ActionTrip}}, seq(
			obsN(1, 2, B), obs(3, B, tripL2))},
		{"a re-trip keeps the more severe action", []Rule{
			{Processor: "tail", Action: schemas.ActionTrip, SLO: "latency"},
			{Processor: "tail", Action: schemas.ActionDegrade, Fallback: "small", K: 5}}, seq(
			obsN(1, 2, B), obs(3, B, tripL2), adv(8, halfOpenL2), obs(9, B, tripL2))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBreaker(t, onlyRules(tc.rules...))
			for i, s := range tc.steps {
				name := "step " + strconv.Itoa(i)
				if s.v != nil {
					name += " observe " + string(s.v.Status) + " at " + strconv.FormatFloat(float64(s.v.WindowEndUnixNano-t0)/float64(minute), 'g', -1, 64) + "m"
					checkCmds(t, name, b.Observe(*s.v), s.want)
				} else {
					name += " advance to " + strconv.FormatFloat(s.adv, 'g', -1, 64) + "m"
					checkCmds(t, name, b.Advance(at(s.adv)), s.want)
				}
			}
		})
	}
}

// run observes or advances and returns the one command expected.
func one(t *testing.T, cmds []schemas.FuseCommand) schemas.FuseCommand {
	t.Helper()
	if len(cmds) != 1 {
		t.Fatalf("got %d commands, want 1", len(cmds))
	}
	return cmds[0]
}

func TestCommandFields(t *testing.T) {
	p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionDegrade, Fallback: "small"})
	b := newBreaker(t, p)
	var ids []string
	for m := 1; m <= 2; m++ {
		v := tail(float64(m), B)
		ids = append(ids, v.ID)
		b.Observe(v)
	}
	v3 := tail(3, B)
	ids = append(ids, v3.ID)
	c := one(t, b.Observe(v3))
	base := uint64(at(1)/sec) << VersionShift // the target's first evaluation
	if c.Target != keyA || c.Action != schemas.ActionDegrade || c.Level != 1 || c.State != schemas.StateOpen ||
		c.Fallback != "small" || c.ThrottleFraction != 0 || c.Version != base+1 ||
		c.IssuedAtUnixNano != at(3) || c.ExpiresAtUnixNano != at(3)+15*minute || c.KeyID != "" || c.Signature != "" {
		t.Fatalf("trip command %+v", c)
	}
	if len(c.Reasons) != 3 {
		t.Fatalf("reasons %+v, want the 3 breaches", c.Reasons)
	}
	for i, r := range c.Reasons {
		if r.VerdictID != ids[i] || r.Text == "" {
			t.Fatalf("reason %d = %+v, want verdict %s", i, r, ids[i])
		}
	}
	if len(c.CorrelationIDs) != 2 || len(c.CorrelationIDs[0]) != 32 || c.CorrelationIDs[1] != "slo:latency" {
		t.Fatalf("correlation ids %q", c.CorrelationIDs)
	}
	incident := c.CorrelationIDs[0]

	h := one(t, b.Advance(at(8)))
	if h.Action != schemas.ActionDegrade || h.State != schemas.StateHalfOpen || h.Fallback != "small" ||
		h.ThrottleFraction != 0.1 || h.Version != base+2 || h.CorrelationIDs[0] != incident {
		t.Fatalf("half-open command %+v", h)
	}
	if len(h.Reasons) != len(ids) {
		t.Fatalf("half-open command cites %d verdicts, want the %d of the trip", len(h.Reasons), len(ids))
	}
	for i, r := range h.Reasons {
		if r.VerdictID != ids[i] {
			t.Fatalf("half-open reason %d cites %s, want %s", i, r.VerdictID, ids[i])
		}
	}
	var okIDs []string
	var cl []schemas.FuseCommand
	for m := 9; m <= 11; m++ {
		v := tail(float64(m), O)
		okIDs = append(okIDs, v.ID)
		cl = b.Observe(v)
	}
	cc := one(t, cl)
	if cc.Action != schemas.ActionClose || cc.Level != 0 || cc.Fallback != "" || cc.ThrottleFraction != 0 ||
		cc.Version != base+3 || cc.CorrelationIDs[0] != incident || len(cc.Reasons) != 3 {
		t.Fatalf("close command %+v", cc)
	}
	for i, r := range cc.Reasons {
		if r.VerdictID != okIDs[i] {
			t.Fatalf("close reason %d cites %s, want %s", i, r.VerdictID, okIDs[i])
		}
	}
}

func TestThrottleFractions(t *testing.T) {
	for _, tc := range []struct {
		frac, wantHalfOpen float64
	}{{0.5, 0.5}, {0.05, 0.1}} {
		b := newBreaker(t, onlyRules(Rule{Processor: "tail", Action: schemas.ActionThrottle, ThrottleFraction: tc.frac, K: 1}))
		c := one(t, b.Observe(tail(1, B)))
		if c.Action != schemas.ActionThrottle || c.Level != 1 || c.ThrottleFraction != tc.frac {
			t.Fatalf("open throttle %+v", c)
		}
		h := one(t, b.Advance(at(6)))
		if h.Action != schemas.ActionThrottle || h.State != schemas.StateHalfOpen || h.ThrottleFraction != tc.wantHalfOpen {
			t.Fatalf("half-open throttle fraction %v, want %v", h.ThrottleFraction, tc.wantHalfOpen)
		}
	}
}

func TestRollbackAndScaleOut(t *testing.T) {
	b := newBreaker(t, onlyRules(
		Rule{Processor: "drift", Action: schemas.ActionRollback, Fallback: "baseline", K: 1},
		Rule{Processor: "scaling", Action: schemas.ActionScaleOut, K: 1, Target: []string{DimService}},
	))
	c := one(t, b.Observe(mkVerdict("drift", "conf", "confidence", keyA, at(1), B)))
	if c.Action != schemas.ActionRollback || c.Level != 1 || c.Fallback != "baseline" || c.Target != keyA {
		t.Fatalf("rollback %+v", c)
	}
	s := one(t, b.Observe(mkVerdict("scaling", "mix", "entropy", keyA, at(1), B)))
	wantTarget := schemas.Key{Tenant: "*", Service: "chat", Model: "*", Variant: "*"}
	if s.Action != schemas.ActionScaleOut || s.Level != 0 || s.Target != wantTarget {
		t.Fatalf("scale out %+v", s)
	}
}

// TestCloseOnWhatTripped is the case: a degrade opened by the
// decay SLO is not closed by oks of the tail SLO while decay still
// breaches or warns; the decay SLO's own oks close it, citing them; a
// tail breach while half-open still re-trips.
func TestCloseOnWhatTripped(t *testing.T) {
	p := onlyRules(
		Rule{Processor: "decay", Action: schemas.ActionDegrade, Fallback: "small", K: 1, N: 1},
		Rule{Processor: "tail", Action: schemas.ActionTrip},
	)
	b := newBreaker(t, p)
	decay := func(m float64, st schemas.Status) schemas.Verdict {
		return mkVerdict("decay", "align", "alignment_decline", keyA, at(m), st)
	}
	checkCmds(t, "decay trips", b.Observe(decay(1, B)), &want{schemas.ActionDegrade, schemas.StateOpen, 1})
	checkCmds(t, "half-open", b.Advance(at(6)), &want{schemas.ActionDegrade, schemas.StateHalfOpen, 1})
	for m := 7.0; m <= 10; m++ {
		if got := b.Observe(tail(m, O)); len(got) != 0 {
			t.Fatalf("tail ok at %v: %s/%s, want no command (tail did not trip it)", m, got[0].Action, got[0].State)
		}
	}
	b.Observe(decay(11, O))
	b.Observe(decay(12, O))
	b.Observe(decay(13, W)) // the tripping SLO warns: its streak starts again
	b.Observe(decay(14, O))
	b.Observe(tail(14.5, O)) // neither counts nor resets
	if got := b.Observe(decay(15, O)); len(got) != 0 {
		t.Fatalf("closed after 2 oks since the warn: %+v", got)
	}
	c := one(t, b.Observe(decay(16, O)))
	if c.State != schemas.StateClosed || len(c.Reasons) != 3 {
		t.Fatalf("got %s with %d reasons, want closed citing 3", c.State, len(c.Reasons))
	}
	for i, r := range c.Reasons {
		if want := decay(float64(14+i), O).ID; r.VerdictID != want {
			t.Fatalf("reason %d cites %s, want decay ok %s", i, r.VerdictID, want)
		}
		if !strings.Contains(r.Text, "tripping SLO align") || !strings.Contains(r.Text, "value=50 budget=80") {
			t.Fatalf("reason %q does not name the tripping SLO with its value and budget", r.Text)
		}
	}

	// Another SLO's breach while half-open re-trips, and then both must
	// be healthy to close.
	checkCmds(t, "decay trips again", b.Observe(decay(20, B)), &want{schemas.ActionDegrade, schemas.StateOpen, 1})
	checkCmds(t, "half-open", b.Advance(at(40)), &want{schemas.ActionDegrade, schemas.StateHalfOpen, 1})
	c = one(t, b.Observe(tail(41, B)))
	if c.State != schemas.StateOpen || c.Action != schemas.ActionTrip || !strings.Contains(c.Reasons[0].Text, "another SLO") {
		t.Fatalf("tail breach in half-open: %s/%s %q, want a trip citing another SLO", c.Action, c.State, c.Reasons[0].Text)
	}
	half := one(t, b.Advance(at(200)))
	if half.State != schemas.StateHalfOpen {
		t.Fatalf("state %s, want half_open", half.State)
	}
	for m := 201.0; m <= 203; m++ {
		if got := b.Observe(decay(m, O)); len(got) != 0 {
			t.Fatalf("closed on decay alone although tail tripped it too: %+v", got)
		}
	}
	b.Observe(tail(204, O))
	b.Observe(tail(205, O))
	c = one(t, b.Observe(tail(206, O)))
	if c.State != schemas.StateClosed || len(c.Reasons) != 6 {
		t.Fatalf("got %s with %d reasons, want closed citing 3 per tripping SLO", c.State, len(c.Reasons))
	}
}

// TestProbesFor: only a half-open target's tripping series are probed,
// since the instant the half-open began; open and closed targets none.
func TestProbesFor(t *testing.T) {
	b := newBreaker(t, onlyRules(Rule{Processor: "decay", Action: schemas.ActionDegrade, Fallback: "small", K: 1, N: 1}, Rule{Processor: "tail", Action: schemas.ActionTrip}))
	decay := func(m float64, st schemas.Status) schemas.Verdict {
		return mkVerdict("decay", "align", "alignment_decline", keyA, at(m), st)
	}
	b.Observe(decay(1, B))
	if p := b.ProbesFor("align"); p != nil {
		t.Fatalf("open target probed: %v", p)
	}
	b.Advance(at(6))
	if p := b.ProbesFor("align"); len(p) != 1 || p[keyA] != at(6) {
		t.Fatalf("half-open probes %v, want %v since %d", p, keyA, at(6))
	}
	if p := b.ProbesFor("latency"); p != nil {
		t.Fatalf("an SLO that did not trip the target is probed: %v", p)
	}
	for m := 7.0; m <= 9; m++ {
		b.Observe(decay(m, O))
	}
	if p := b.ProbesFor("align"); p != nil {
		t.Fatalf("closed target still probed: %v", p)
	}
}

// TestHalfOpenIgnoresIncidentWindows: in half-open, verdicts of the
// tripping series on windows that began before the half-open (they still
// hold the incident) neither close nor re-trip; probe windows do.
func TestHalfOpenIgnoresIncidentWindows(t *testing.T) {
	b := newBreaker(t, onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1}))
	long := func(m float64, st schemas.Status) schemas.Verdict {
		v := tail(m, st)
		v.WindowStartUnixNano = at(m - 10)
		return v
	}
	one(t, b.Observe(tail(0, B)))
	checkCmds(t, "half-open", b.Advance(at(5)), &want{schemas.ActionHalfOpen, schemas.StateHalfOpen, 2})
	for m := 6.0; m <= 12; m++ {
		if got := b.Observe(long(m, B)); len(got) != 0 {
			t.Fatalf("a breach on a window holding the incident re-tripped: %s", got[0].Reasons[0].Text)
		}
	}
	for m := 13.0; m <= 14; m++ {
		b.Observe(long(m, O))
	}
	if b.Stats().Stale != 9 {
		t.Fatalf("stale %d, want 9", b.Stats().Stale)
	}
	b.Observe(tail(15, O))
	b.Observe(tail(16, O))
	if c := one(t, b.Observe(tail(17, O))); c.State != schemas.StateClosed {
		t.Fatalf("state %s, want closed on three probe windows", c.State)
	}
}
