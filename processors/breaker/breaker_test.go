package breaker

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// tripNow trips keyA with a k=1 rule at minute m and returns the cool-down.
func tripAt(t *testing.T, b *Breaker, m float64) time.Duration {
	t.Helper()
	v := tail(m, B)
	c := one(t, b.Observe(v))
	if c.State != schemas.StateOpen {
		t.Fatalf("at %vm: state %s, want open", m, c.State)
	}
	return time.Duration(b.targets[keyA].openUntil - v.WindowEndUnixNano)
}

func TestBackoffAndCap(t *testing.T) {
	p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1})
	p.CoolDown, p.MaxCoolDown = 5*time.Minute, time.Hour
	b := newBreaker(t, p)
	want := []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, time.Hour, time.Hour, time.Hour}
	m := 1.0
	for i, w := range want {
		got := tripAt(t, b, m)
		if got != w {
			t.Fatalf("trip %d: cool-down %v, want %v", i+1, got, w)
		}
		// Half-open exactly when the cool-down ends, then fail the probe.
		m += got.Minutes()
		h := one(t, b.Advance(at(m)))
		if h.State != schemas.StateHalfOpen {
			t.Fatalf("trip %d: %s after the cool-down, want half_open", i+1, h.State)
		}
		m++
	}
}

func TestBackoffFactorOneAndNonIntegerFactor(t *testing.T) {
	for _, tc := range []struct {
		factor float64
		want   []time.Duration
	}{
		{1, []time.Duration{5 * time.Minute, 5 * time.Minute, 5 * time.Minute}},
		{1.5, []time.Duration{4 * time.Minute, 6 * time.Minute, 9 * time.Minute, 10 * time.Minute}},
	} {
		p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1})
		p.CoolDown, p.MaxCoolDown, p.BackoffFactor = 5*time.Minute, 10*time.Minute, tc.factor
		if tc.factor == 1.5 {
			p.CoolDown = 4 * time.Minute
		}
		b := newBreaker(t, p)
		for i, w := range tc.want {
			if got := time.Duration(b.coolDown(i + 1)); got != w {
				t.Fatalf("factor %v step %d: %v, want %v", tc.factor, i+1, got, w)
			}
		}
	}
}

// closeAfterTrip takes an open keyA through half-open to closed and returns
// the minute of the close.
func closeAfterTrip(t *testing.T, b *Breaker, openUntilMinute float64) float64 {
	t.Helper()
	one(t, b.Advance(at(openUntilMinute)))
	m := openUntilMinute
	for i := 0; i < b.pol.CloseAfter; i++ {
		m++
		cmds := b.Observe(tail(m, O))
		if i == b.pol.CloseAfter-1 {
			if c := one(t, cmds); c.State != schemas.StateClosed {
				t.Fatalf("state %s, want closed", c.State)
			}
		}
	}
	return m
}

func TestFlappingKeepsTheDoubledCoolDown(t *testing.T) {
	p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1})
	p.FlapWindow = time.Hour
	b := newBreaker(t, p)
	// Trip 1: 5m. Close at 9m.
	if cd := tripAt(t, b, 1); cd != 5*time.Minute {
		t.Fatalf("first trip cool-down %v", cd)
	}
	closedAt := closeAfterTrip(t, b, 6)
	inc1 := b.targets[keyA].incident
	// Re-trip 10m after the close: within the flap window → doubled.
	if cd := tripAt(t, b, closedAt+10); cd != 10*time.Minute {
		t.Fatalf("re-trip within the flap window: cool-down %v, want 10m", cd)
	}
	if b.targets[keyA].incident == inc1 {
		t.Fatalf("a trip after a close must start a new incident id")
	}
	closedAt = closeAfterTrip(t, b, closedAt+20)
	// And again within the window → 20m.
	if cd := tripAt(t, b, closedAt+59); cd != 20*time.Minute {
		t.Fatalf("second re-trip within the flap window: cool-down %v, want 20m", cd)
	}
	closedAt = closeAfterTrip(t, b, closedAt+59+20)
	// A trip exactly FlapWindow after the close starts again at 5m.
	if cd := tripAt(t, b, closedAt+60); cd != 5*time.Minute {
		t.Fatalf("trip after the flap window: cool-down %v, want 5m", cd)
	}
}

func TestFlapWindowZeroDisablesMemory(t *testing.T) {
	p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1})
	p.FlapWindow = 0
	b := newBreaker(t, p)
	tripAt(t, b, 1)
	c := closeAfterTrip(t, b, 6)
	if cd := tripAt(t, b, c+1); cd != 5*time.Minute {
		t.Fatalf("cool-down %v, want 5m with flap_window 0", cd)
	}
}

func TestRefreshBeforeExpiry(t *testing.T) {
	p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1})
	p.CoolDown, p.MaxCoolDown, p.CommandTTL = time.Hour, time.Hour, 10*time.Minute
	b := newBreaker(t, p)
	c1 := one(t, b.Observe(tail(0, B)))
	if got := b.Advance(at(4.99)); len(got) != 0 {
		t.Fatalf("refresh before TTL/2: %d commands", len(got))
	}
	// A breach while open at TTL/2 refreshes too (one command, not two).
	c2 := one(t, b.Observe(tail(5, B)))
	if c2.Version != c1.Version+1 || c2.Action != c1.Action || c2.State != c1.State ||
		c2.IssuedAtUnixNano != at(5) || c2.ExpiresAtUnixNano != at(15) {
		t.Fatalf("refresh %+v after %+v", c2, c1)
	}
	if len(c2.Reasons) != len(c1.Reasons) || len(c1.Reasons) == 0 {
		t.Fatalf("refresh cites %d verdicts, the trip %d", len(c2.Reasons), len(c1.Reasons))
	}
	// Same verdicts; the text says it is a refresh of the open state
	// (not a new failure), once, however many refreshes follow.
	pre := "refresh of the open state (unchanged since 00:00:00): "
	for i := range c2.Reasons {
		if c2.Reasons[i].VerdictID != c1.Reasons[i].VerdictID || c2.Reasons[i].Text != pre+c1.Reasons[i].Text {
			t.Fatalf("refresh reason %d = %+v, want %q + the trip's %+v", i, c2.Reasons[i], pre, c1.Reasons[i])
		}
	}
	if len(b.Advance(at(9.99))) != 0 {
		t.Fatalf("refresh too early")
	}
	c3 := one(t, b.Advance(at(10)))
	if c3.Version != c2.Version+1 || c3.ExpiresAtUnixNano != at(20) {
		t.Fatalf("second refresh %+v", c3)
	}
	if c3.Reasons[0].Text != c2.Reasons[0].Text {
		t.Fatalf("second refresh text %q, want %q (texts must not grow)", c3.Reasons[0].Text, c2.Reasons[0].Text)
	}
	if b.Stats().Refreshes != 2 {
		t.Fatalf("refreshes %d, want 2", b.Stats().Refreshes)
	}
	// A closed target is not refreshed.
	b2 := newBreaker(t, onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1}))
	tripAt(t, b2, 1)
	end := closeAfterTrip(t, b2, 6)
	for m := end + 1; m < end+120; m += 5 {
		if got := b2.Advance(at(m)); len(got) != 0 {
			t.Fatalf("closed target issued %s at %vm", got[0].Action, m)
		}
	}
}

func TestEvictionAndVersionBase(t *testing.T) {
	p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1})
	p.EvictAfter = 2 * time.Hour
	b := newBreaker(t, p)
	tripAt(t, b, 0)
	end := closeAfterTrip(t, b, 5)
	last := b.targets[keyA].base + b.targets[keyA].seq
	if got := b.Advance(at(end + 119.99)); len(got) != 0 || b.Targets() != 1 {
		t.Fatalf("evicted too early: %d targets", b.Targets())
	}
	if got := b.Advance(at(end + 120)); len(got) != 0 {
		t.Fatalf("eviction issued %d commands", len(got))
	}
	if b.Targets() != 0 || b.Stats().Evictions != 1 {
		t.Fatalf("targets %d evictions %d after EvictAfter", b.Targets(), b.Stats().Evictions)
	}
	c := one(t, b.Observe(tail(end+121, B)))
	if c.Version <= last {
		t.Fatalf("new incarnation version %d not above the evicted %d", c.Version, last)
	}
	if want := uint64(at(end+121)/sec)<<VersionShift + 1; c.Version != want {
		t.Fatalf("version %d, want %d", c.Version, want)
	}
}

func TestHealthyVerdictsDoNotCreateTargets(t *testing.T) {
	b := newBreaker(t, DefaultPolicy())
	for m := 0; m < 100; m++ {
		k := keyA
		k.Tenant = "t" + time.Duration(m).String()
		b.Observe(mkVerdict("tail", "latency", "duration_ms", k, at(float64(m)), O))
		b.Observe(mkVerdict("tail", "latency", "duration_ms", k, at(float64(m)+0.5), W))
	}
	if b.Targets() != 0 {
		t.Fatalf("%d targets from healthy verdicts", b.Targets())
	}
}

func TestMaxTargets(t *testing.T) {
	p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip})
	p.MaxTargets = 2
	b := newBreaker(t, p)
	for i, tenant := range []string{"a", "b", "c", "d"} {
		k := keyA
		k.Tenant = tenant
		b.Observe(mkVerdict("tail", "latency", "duration_ms", k, at(float64(i)), B))
	}
	s := b.Stats()
	if s.Targets != 2 || s.TargetOverflow != 2 {
		t.Fatalf("targets %d overflow %d, want 2 and 2", s.Targets, s.TargetOverflow)
	}
}

func TestCoarseTargetGathersKeys(t *testing.T) {
	p := onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip})
	p.Target = []string{DimService, DimModel}
	b := newBreaker(t, p)
	ka, kb := keyA, keyA
	kb.Tenant = "other"
	// Two breaches from each tenant: each series has 2 < k.
	for m := 1; m <= 2; m++ {
		for _, k := range []schemas.Key{ka, kb} {
			if got := b.Observe(mkVerdict("tail", "latency", "duration_ms", k, at(float64(m)), B)); len(got) != 0 {
				t.Fatalf("tripped on %d breaches per series", m)
			}
		}
	}
	v := mkVerdict("tail", "latency", "duration_ms", kb, at(3), B)
	c := one(t, b.Observe(v))
	want := schemas.Key{Tenant: "*", Service: "chat", Model: "big", Variant: "*"}
	if c.Target != want {
		t.Fatalf("target %v, want %v", c.Target, want)
	}
	if b.Targets() != 1 {
		t.Fatalf("%d targets, want 1", b.Targets())
	}
	// Half-open: ok verdicts of the tripping SLO for either tenant count
	// toward closing, one per evaluation: the two oks at 9 are one healthy
	// evaluation; a warn of either tenant resets the streak, even when the
	// other tenant is ok in the same evaluation; another SLO's oks count
	// for nothing.
	one(t, b.Observe(mkVerdict("tail", "latency", "duration_ms", ka, at(8), O))) // the cool-down ends: half-open
	b.Observe(mkVerdict("tail", "latency", "duration_ms", ka, at(9), O))
	b.Observe(mkVerdict("tail", "latency", "duration_ms", kb, at(9), O))
	b.Observe(mkVerdict("tail", "latency", "duration_ms", ka, at(10), O))
	b.Observe(mkVerdict("tail", "latency", "duration_ms", kb, at(10), W))
	for m := 11; m <= 14; m++ {
		if got := b.Observe(mkVerdict("tail", "ttft", "ttft_ms", ka, at(float64(m)), O)); len(got) != 0 && got[0].State == schemas.StateClosed {
			t.Fatalf("closed by oks of an SLO that did not trip it: %+v", got)
		}
	}
	b.Observe(mkVerdict("tail", "latency", "duration_ms", kb, at(15), O))
	if got := b.Observe(mkVerdict("tail", "latency", "duration_ms", ka, at(16), O)); len(got) != 0 && got[0].State == schemas.StateClosed {
		t.Fatalf("closed after two healthy evaluations since the warn (CloseAfter 3): %+v", got)
	}
	if c := one(t, b.Observe(mkVerdict("tail", "latency", "duration_ms", kb, at(17), O))); c.State != schemas.StateClosed {
		t.Fatalf("state %s, want closed", c.State)
	}
}

func TestOneVerdictSeveralTargets(t *testing.T) {
	b := newBreaker(t, onlyRules(
		Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1},
		Rule{Processor: "tail", Action: schemas.ActionScaleOut, K: 1, Target: []string{DimModel}},
		Rule{Processor: "tail", Action: schemas.ActionDegrade, Fallback: "small", K: 1},
	))
	got := b.Observe(tail(1, B))
	if len(got) != 2 {
		t.Fatalf("%d commands, want one per target (2)", len(got))
	}
	if got[0].Target != keyA || got[0].Action != schemas.ActionTrip {
		t.Fatalf("first %v %s, want keyA trip (highest level of its rules)", got[0].Target, got[0].Action)
	}
	if got[1].Target.Model != "big" || got[1].Target.Tenant != "*" || got[1].Action != schemas.ActionScaleOut {
		t.Fatalf("second %v %s", got[1].Target, got[1].Action)
	}
}

func TestIgnoredVerdicts(t *testing.T) {
	b := newBreaker(t, DefaultPolicy())
	bad := tail(1, B)
	bad.ID = ""
	b.Observe(bad)
	b.Observe(mkVerdict("drift", "x", "confidence", keyA, at(1), B))
	b.Observe(tail(2, I))
	s := b.Stats()
	if s.Verdicts != 3 || s.Invalid != 1 || s.Unmatched != 1 || s.Insufficient != 1 || s.Targets != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestAdvanceSortsByTarget(t *testing.T) {
	b := newBreaker(t, onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1}))
	for _, tenant := range []string{"zeta", "alpha", "mid", "beta"} {
		k := keyA
		k.Tenant = tenant
		b.Observe(mkVerdict("tail", "latency", "duration_ms", k, at(1), B))
	}
	got := b.Advance(at(6))
	if len(got) != 4 {
		t.Fatalf("%d commands, want 4", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Target.String() >= got[i].Target.String() {
			t.Fatalf("not sorted: %s before %s", got[i-1].Target, got[i].Target)
		}
	}
}
