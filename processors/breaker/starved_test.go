package breaker

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// probeVerdict is a tail verdict for keyA judged on [start, end) with n
// observations; insufficient_data ones carry min_samples as the tail
// processor's do.
func probeVerdict(start, end float64, st schemas.Status, n int64) schemas.Verdict {
	v := tail(end, st)
	v.WindowStartUnixNano = at(start)
	v.N = n
	if st == I {
		v.Value, v.Threshold = 0, 80
		v.Details = []schemas.Detail{{Name: "n", Value: float64(n)}, {Name: "min_samples", Value: 100}}
	}
	return v
}

// TestStarvedProbes: a half-open target whose probe windows are too thin
// for min_samples is reported once a full probe window (one that began
// after the half-open) is insufficient_data — not while the window still
// grows from the half-open's start — and stays reported, half-open,
// without a close or a re-trip, until an ok or warn of the tripping SLO
// comes; the report survives a snapshot and ends with the half-open.
func TestStarvedProbes(t *testing.T) {
	b := newBreaker(t, onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1}))
	one(t, b.Observe(tail(0, B)))
	checkCmds(t, "half-open", b.Advance(at(5)), &want{schemas.ActionHalfOpen, schemas.StateHalfOpen, 2})
	// The probe window grows from the half-open (start = 5): not sure yet.
	for m := 6.0; m <= 7; m++ {
		if got := b.Observe(probeVerdict(5, m, I, 40)); len(got) != 0 {
			t.Fatalf("insufficient_data issued %d commands", len(got))
		}
		if s := b.StarvedProbes(); s != nil {
			t.Fatalf("at %v: starved while the probe window still grows: %+v", m, s)
		}
	}
	// A verdict of another SLO says nothing about the tripping one.
	b.Observe(mkVerdict("tail", "other", "duration_ms", keyA, at(8), I))
	if s := b.StarvedProbes(); s != nil {
		t.Fatalf("starved on another SLO's verdict: %+v", s)
	}
	// Full windows (they began after the half-open) that stay too thin.
	for m := 8.0; m <= 40; m++ {
		if got := b.Observe(probeVerdict(m-2, m, I, 64)); len(got) != 0 {
			t.Fatalf("at %v: insufficient_data issued %s", m, got[0].Action)
		}
		if c := b.Advance(at(m)); len(c) > 0 && (c[0].State != schemas.StateHalfOpen) {
			t.Fatalf("at %v: %s/%s, want only half-open refreshes", m, c[0].Action, c[0].State)
		}
	}
	thin := []processors.StarvedProbe{{Target: keyA, Processor: "tail", SLO: "latency", Metric: "duration_ms", Probes: 64, MinSamples: 100, Since: at(8), At: at(40)}}
	checkStarved(t, "after 33 thin windows", b.StarvedProbes(), thin)

	// The report is state: a restored breaker says the same.
	snap, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r := newBreaker(t, b.Policy())
	if err := r.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	checkStarved(t, "restored", r.StarvedProbes(), thin)

	// An ok of the tripping SLO: fed again, not starved.
	b.Observe(probeVerdict(39, 41, O, 120))
	checkStarved(t, "after an ok", b.StarvedProbes(), nil)
	b.Observe(probeVerdict(40, 42, I, 50))
	checkStarved(t, "thin again", b.StarvedProbes(), []processors.StarvedProbe{{Target: keyA, Processor: "tail", SLO: "latency", Metric: "duration_ms", Probes: 50, MinSamples: 100, Since: at(42), At: at(42)}})
	// A breach re-trips: open, no longer half-open, not starved.
	checkCmds(t, "re-trip", b.Observe(probeVerdict(41, 43, B, 120)), &want{schemas.ActionTrip, schemas.StateOpen, 2})
	checkStarved(t, "open", b.StarvedProbes(), nil)
}

func checkStarved(t *testing.T, step string, got, want []processors.StarvedProbe) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: starved %+v, want %+v", step, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: starved[%d] %+v, want %+v", step, i, got[i], want[i])
		}
	}
}

// TestStarvedTargetIsNotEvicted: a starved half-open target keeps getting
// insufficient_data verdicts; it stays half-open past EvictAfter (24 h by
// default) instead of being dropped as inactive, which let its last
// command expire at the gateways (the model got all the traffic without
// evidence that it recovered) and ended the starvation report.
func TestStarvedTargetIsNotEvicted(t *testing.T) {
	b := newBreaker(t, onlyRules(Rule{Processor: "tail", Action: schemas.ActionTrip, K: 1}))
	one(t, b.Observe(tail(0, B)))
	checkCmds(t, "half-open", b.Advance(at(5)), &want{schemas.ActionHalfOpen, schemas.StateHalfOpen, 2})
	last := 0.0
	for m := 10.0; m <= 26*60; m += 5 {
		b.Observe(probeVerdict(m-2, m, I, 64))
		for _, c := range b.Advance(at(m)) {
			if c.State != schemas.StateHalfOpen {
				t.Fatalf("at %v min: %s/%s, want only half-open refreshes", m, c.Action, c.State)
			}
		}
		last = m
	}
	if s := b.StarvedProbes(); len(s) != 1 || s[0].At != at(last) {
		t.Fatalf("after 26 h of thin probe windows: starved %+v, want the target starved at %v min", s, last)
	}
	if st := b.Stats(); st.Evictions != 0 {
		t.Fatalf("a starved half-open target was evicted (%d evictions)", st.Evictions)
	}
}
