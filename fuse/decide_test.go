package fuse

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// testClient is a client fed directly through handle (the decision logic
// under test does not depend on the source).
type testClient struct {
	*Client
	ring *Keyring
	now  time.Time
	off  int64
}

func newTestClient(t *testing.T) *testClient {
	t.Helper()
	s := sha256.Sum256([]byte("decide test"))
	k, err := NewKey("k1", s[:], time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ring, _ := NewKeyring("", k)
	tc := &testClient{ring: ring, now: t0}
	c, err := NewClient(WithKeyring(ring), WithSource(nopSource{}), WithClock(func() time.Time { return tc.now }))
	if err != nil {
		t.Fatal(err)
	}
	tc.Client = c
	return tc
}

// nopSource satisfies NewClient; these tests never Run the client.
type nopSource struct{}

func (nopSource) Open(context.Context) (map[int32]int64, error) { return nil, nil }
func (nopSource) Poll(context.Context) ([]Record, error)        { return nil, ErrSourceClosed }
func (nopSource) Close() error                                  { return nil }

func key(tenant, service, model, variant string) fuseschema.Key {
	return fuseschema.Key{Tenant: tenant, Service: service, Model: model, Variant: variant}
}

// put applies a signed command for target and fails if it is rejected.
func (tc *testClient) put(t *testing.T, target fuseschema.Key, version uint64, action fuseschema.Action, state fuseschema.BreakerState, level int, fallback string, frac float64) {
	t.Helper()
	c := fuseschema.FuseCommand{
		Target: target, Action: action, State: state, Level: level, Version: version,
		IssuedAtUnixNano: tc.now.UnixNano(), ExpiresAtUnixNano: tc.now.Add(time.Hour).UnixNano(),
		Fallback: fallback, ThrottleFraction: frac, Reasons: []fuseschema.Reason{{VerdictID: "v1", Text: "t"}},
	}
	c, err := tc.ring.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.MarshalJSON()
	before := tc.applied.Load()
	tc.off++
	tc.handle(&Record{Offset: tc.off, Value: b})
	if tc.applied.Load() != before+1 {
		t.Fatalf("command for %s v%d not applied: %+v", target, version, tc.Stats().Rejected)
	}
}

func TestDecide(t *testing.T) {
	req := key("acme", "chat", "big", "stable")
	other := key("zeta", "chat", "big", "stable")

	t.Run("nothing matches", func(t *testing.T) {
		tc := newTestClient(t)
		tc.put(t, key("acme", "chat", "small", "stable"), 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, "", 0)
		if d := tc.Decide(req); d.Outcome != Allow || d.Matched {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("most specific wins over a higher level", func(t *testing.T) {
		tc := newTestClient(t)
		tc.put(t, key("*", "chat", "big", "*"), 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, "", 0)
		tc.put(t, req, 1, fuseschema.ActionThrottle, fuseschema.StateOpen, 1, "", 0.25)
		if d := tc.Decide(req); d.Outcome != Throttle || d.Fraction != 0.25 || d.Command.Target != req {
			t.Fatalf("exact key: %+v", d)
		}
		if d := tc.Decide(other); d.Outcome != Reject || d.Command.Target.Tenant != "*" {
			t.Fatalf("other tenant: %+v", d)
		}
	})
	t.Run("equal specificity: highest level", func(t *testing.T) {
		tc := newTestClient(t)
		tc.put(t, key("*", "chat", "big", "*"), 9, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, "small", 0)
		tc.put(t, key("acme", "chat", "*", "*"), 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, "", 0)
		if d := tc.Decide(req); d.Outcome != Reject {
			t.Fatalf("%+v", d)
		}
		if d := tc.Decide(other); d.Outcome != Degrade || d.Fallback != "small" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("closed, advisory and expired commands do not mask coarser ones", func(t *testing.T) {
		tc := newTestClient(t)
		tc.put(t, key("*", "chat", "big", "*"), 1, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, "small", 0)
		tc.put(t, req, 1, fuseschema.ActionClose, fuseschema.StateClosed, 0, "", 0)
		tc.put(t, key("acme", "chat", "big", "*"), 1, fuseschema.ActionScaleOut, fuseschema.StateOpen, 0, "", 0)
		if d := tc.Decide(req); d.Outcome != Degrade {
			t.Fatalf("%+v", d)
		}
		tc.now = tc.now.Add(time.Hour) // every command expires
		if d := tc.Decide(req); d.Outcome != Allow || d.Matched {
			t.Fatalf("after expiry: %+v", d)
		}
		if _, ok := tc.State(req); ok {
			t.Fatalf("State returned an expired command")
		}
		if n := len(tc.Snapshot()); n != 0 {
			t.Fatalf("Snapshot has %d expired commands", n)
		}
	})
	t.Run("half-open probes", func(t *testing.T) {
		tc := newTestClient(t)
		tc.put(t, req, 1, fuseschema.ActionHalfOpen, fuseschema.StateHalfOpen, 2, "", 0.1)
		d := tc.Decide(req)
		if d.Outcome != Reject || !d.Probe || d.Fraction != 0.1 || d.Admit(0.05) != Allow || d.Admit(0.1) != Reject {
			t.Fatalf("half-open trip: %+v", d)
		}
		tc.put(t, other, 1, fuseschema.ActionDegrade, fuseschema.StateHalfOpen, 1, "small", 0.2)
		d = tc.Decide(other)
		if d.Outcome != Degrade || !d.Probe || d.Admit(0.19) != Allow || d.Admit(0.5) != Degrade || d.Fallback != "small" {
			t.Fatalf("half-open degrade: %+v", d)
		}
	})
	t.Run("throttle and rollback", func(t *testing.T) {
		tc := newTestClient(t)
		tc.put(t, req, 1, fuseschema.ActionThrottle, fuseschema.StateOpen, 1, "", 0.3)
		d := tc.Decide(req)
		if d.Probe || d.Admit(0.29) != Allow || d.Admit(0.3) != Reject {
			t.Fatalf("throttle: %+v", d)
		}
		tc.put(t, key("*", "*", "*", "canary"), 1, fuseschema.ActionRollback, fuseschema.StateOpen, 1, "stable", 0)
		if d := tc.Decide(key("x", "y", "z", "canary")); d.Outcome != Rollback || d.Fallback != "stable" || d.Admit(0) != Rollback {
			t.Fatalf("rollback: %+v", d)
		}
	})
}

func TestOutcomeString(t *testing.T) {
	for o, s := range map[Outcome]string{Allow: "allow", Degrade: "degrade", Reject: "reject", Throttle: "throttle", Rollback: "rollback", 99: "unknown"} {
		if o.String() != s {
			t.Fatalf("%d: %s", o, o.String())
		}
	}
	if len(RejectReasons) != len(rejectIndex) {
		t.Fatalf("RejectReasons and rejectIndex disagree")
	}
	for i, r := range RejectReasons {
		if rejectIndex[r] != i {
			t.Fatalf("rejectIndex[%s] = %d, want %d", r, rejectIndex[r], i)
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	s := sha256.Sum256([]byte("bench"))
	k, _ := NewKey("k1", s[:], time.Time{})
	ring, _ := NewKeyring("", k)
	c, _ := NewClient(WithKeyring(ring), WithSource(nopSource{}), WithClock(func() time.Time { return t0 }))
	// 10,000 targets at two specificities.
	for i := 0; i < 5000; i++ {
		for _, tk := range []fuseschema.Key{key("t"+itoa(i), "chat", "big", "stable"), key("*", "svc"+itoa(i), "m", "*")} {
			cmd, _ := ring.Sign(fuseschema.FuseCommand{Target: tk, Action: fuseschema.ActionTrip, State: fuseschema.StateOpen, Level: 2, Version: 1,
				IssuedAtUnixNano: t0.UnixNano(), ExpiresAtUnixNano: t0.Add(time.Hour).UnixNano(), Reasons: []fuseschema.Reason{{VerdictID: "v", Text: ""}}})
			v, _ := cmd.MarshalJSON()
			c.handle(&Record{Value: v})
		}
	}
	reqs := []fuseschema.Key{key("t42", "chat", "big", "stable"), key("nobody", "svc7", "m", "x"), key("nobody", "none", "m", "x")}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.Decide(reqs[i%len(reqs)])
	}
}

func itoa(i int) string {
	return string(rune('a'+i%26)) + string(rune('a'+(i/26)%26)) + string(rune('a'+(i/676)%26))
}

// BenchmarkVerify decodes and verifies one record, as the client does per
// command read.
func BenchmarkVerify(b *testing.B) {
	s := sha256.Sum256([]byte("bench"))
	k, _ := NewKey("k1", s[:], time.Time{})
	ring, _ := NewKeyring("", k)
	cmd, _ := ring.Sign(fuseschema.FuseCommand{Target: key("acme", "chat", "big", "stable"), Action: fuseschema.ActionDegrade, Fallback: "small",
		State: fuseschema.StateOpen, Level: 1, Version: 1, IssuedAtUnixNano: t0.UnixNano(), ExpiresAtUnixNano: t0.Add(time.Hour).UnixNano(),
		Reasons:        []fuseschema.Reason{{VerdictID: "7df3f31a542270fd0b8b05fa67947a57", Text: "degrade (3 of last 10, k=3): tail/latency/duration_ms breach"}},
		CorrelationIDs: []string{"bdf9cded8a3f5d41676757bb588e46d7", "slo:latency"}})
	v, _ := cmd.MarshalJSON()
	b.ReportAllocs()
	for b.Loop() {
		c, err := fuseschema.DecodeFuseCommand(v)
		if err != nil {
			b.Fatal(err)
		}
		if err := ring.Verify(&c, t0); err != nil {
			b.Fatal(err)
		}
	}
}
