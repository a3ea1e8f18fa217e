// Package fusetest holds the gateway scenarios every fuse.Source must pass
// against a real (kfake) broker, and the test publisher they use: its own
// HMAC-SHA256 signer and a franz-go producer, independent of the fuse
// package's signing code. For tests only.
package fusetest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// NewSource builds the source under test for topic on brokers.
type NewSource func(brokers []string, topic string) fuse.Source

// Topic is the compacted topic the scenarios use.
const Topic = "fusebox.fuse"

// T0 is the scenarios' wall-clock start.
var T0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Clock is a settable clock for fuse.WithClock.
type Clock struct{ ns atomic.Int64 }

func NewClock(t time.Time) *Clock { c := &Clock{}; c.Set(t); return c }
func (c *Clock) Set(t time.Time)  { c.ns.Store(t.UnixNano()) }
func (c *Clock) Now() time.Time   { return time.Unix(0, c.ns.Load()).UTC() }

// Secret is a test key's secret: 32 bytes derived from its id.
func Secret(id string) []byte {
	s := sha256.Sum256([]byte("fusetest secret " + id))
	return s[:]
}

// Sign is the test publisher's own signer: HMAC-SHA256 over the canonical
// bytes, lower-case hex.
func Sign(c fuseschema.FuseCommand, keyID string) fuseschema.FuseCommand {
	c.KeyID, c.Signature = keyID, ""
	msg, err := c.CanonicalBytes()
	if err != nil {
		panic(err)
	}
	m := hmac.New(sha256.New, Secret(keyID))
	m.Write(msg)
	c.Signature = hex.EncodeToString(m.Sum(nil))
	return c
}

// Cmd builds a valid unsigned command for target.
func Cmd(target fuseschema.Key, version uint64, action fuseschema.Action, issued time.Time, ttl time.Duration) fuseschema.FuseCommand {
	c := fuseschema.FuseCommand{
		Target: target, Action: action, Version: version,
		IssuedAtUnixNano: issued.UnixNano(), ExpiresAtUnixNano: issued.Add(ttl).UnixNano(),
		Reasons:        []fuseschema.Reason{{VerdictID: "verdict-" + target.Model, Text: "test"}},
		CorrelationIDs: []string{"incident-1"},
	}
	switch action {
	case fuseschema.ActionTrip:
		c.Level, c.State = 2, fuseschema.StateOpen
	case fuseschema.ActionHalfOpen:
		c.Level, c.State, c.ThrottleFraction = 2, fuseschema.StateHalfOpen, 0.1
	case fuseschema.ActionDegrade:
		c.Level, c.State, c.Fallback = 1, fuseschema.StateOpen, "small"
	case fuseschema.ActionThrottle:
		c.Level, c.State, c.ThrottleFraction = 1, fuseschema.StateOpen, 0.5
	case fuseschema.ActionClose:
		c.State = fuseschema.StateClosed
	default:
		c.Level, c.State = 1, fuseschema.StateOpen
	}
	return c
}

// Record encodes c as fusebox writes it: key = target, value = canonical JSON.
func Record(t testing.TB, c fuseschema.FuseCommand) *kgo.Record {
	t.Helper()
	v, err := c.MarshalJSON()
	if err != nil {
		t.Fatalf("encode command: %v", err)
	}
	return &kgo.Record{Topic: Topic, Key: []byte(c.Target.String()), Value: v}
}

// Setup starts kfake with the compacted fuse topic (3 partitions).
func Setup(t testing.TB) *Kafka {
	k := StartKafka(t)
	compact := "compact"
	k.CreateTopic(t, Topic, 3, map[string]*string{"cleanup.policy": &compact})
	return k
}

// Gateway is a running client and what its callback saw.
type Gateway struct {
	*fuse.Client
	mu      sync.Mutex
	Changes [][2]fuseschema.FuseCommand
	done    chan error
}

// Start builds a client on src and runs it until the test ends (then it
// checks that Run returned nil).
func Start(t testing.TB, src fuse.Source, opts ...fuse.Opt) *Gateway {
	t.Helper()
	c, err := fuse.NewClient(append([]fuse.Opt{fuse.WithSource(src)}, opts...)...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	g := &Gateway{Client: c, done: make(chan error, 1)}
	c.OnChange(func(old, new fuseschema.FuseCommand) {
		g.mu.Lock()
		g.Changes = append(g.Changes, [2]fuseschema.FuseCommand{old, new})
		g.mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { g.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-g.done:
			if err != nil {
				t.Errorf("Run returned %v, want nil after cancel", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return g
}

// ChangesSeen returns a copy of the OnChange calls so far.
func (g *Gateway) ChangesSeen() [][2]fuseschema.FuseCommand {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][2]fuseschema.FuseCommand(nil), g.Changes...)
}

// Eventually polls cond every 10ms for up to 30s.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var (
	targetA = fuseschema.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "stable"}
	targetB = fuseschema.Key{Tenant: "*", Service: "chat", Model: "medium", Variant: "*"}
	targetC = fuseschema.Key{Tenant: "acme", Service: "search", Model: "tiny", Variant: "canary"}
)

func mustState(t testing.TB, g *Gateway, target fuseschema.Key, version uint64, action fuseschema.Action) {
	t.Helper()
	c, ok := g.State(target)
	if !ok || c.Version != version || c.Action != action {
		t.Fatalf("State(%s) = v%d %s (ok %v), want v%d %s", target, c.Version, c.Action, ok, version, action)
	}
}

// RunCore is the scenario every source must pass: a gateway that starts
// after the commands were published (and the topic compacted) rebuilds the
// current state; then forged, replayed, reordered, expired, unknown-key,
// unsigned and malformed commands are rejected, counted and never applied,
// while valid ones are applied and reported to OnChange.
func RunCore(t *testing.T, newSource NewSource) {
	k := Setup(t)
	clock := NewClock(T0)
	issued := T0.Add(-time.Minute)
	const ttl = time.Hour

	// Before the gateway starts: a history per target.
	var early []*kgo.Record
	for v := uint64(1); v <= 4; v++ {
		a := []fuseschema.Action{fuseschema.ActionTrip, fuseschema.ActionHalfOpen, fuseschema.ActionTrip, fuseschema.ActionDegrade}[v-1]
		early = append(early, Record(t, Sign(Cmd(targetA, v, a, issued, ttl), "k1")))
	}
	early = append(early,
		Record(t, Sign(Cmd(targetB, 7, fuseschema.ActionThrottle, issued, ttl), "k1")),
		Record(t, Sign(Cmd(targetC, 1, fuseschema.ActionTrip, issued.Add(-3*time.Hour), ttl), "k1")), // long expired
		Record(t, Sign(Cmd(targetC, 2, fuseschema.ActionTrip, issued, ttl), "k1")),
	)
	for _, r := range early {
		k.Produce(t, r) // one batch each, so compaction has work to do
	}
	k.Compact(t, Topic)
	if n := len(k.ReadAll(t, Topic, len(early), 1500*time.Millisecond)); n >= len(early) {
		t.Fatalf("compaction kept %d of %d records: the late-start check would not cover compaction", n, len(early))
	}

	ring, err := fuse.NewKeyring("", mustKey(t, "k1", time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	g := Start(t, newSource(k.Brokers, Topic), fuse.WithKeyring(ring), fuse.WithClock(clock.Now))
	if !g.Ready() {
		t.Fatalf("not Ready after WaitReady")
	}
	mustState(t, g, targetA, 4, fuseschema.ActionDegrade)
	mustState(t, g, targetB, 7, fuseschema.ActionThrottle)
	mustState(t, g, targetC, 2, fuseschema.ActionTrip)
	if snap := g.Snapshot(); len(snap) != 3 {
		t.Fatalf("Snapshot has %d targets, want 3", len(snap))
	}
	if d := g.Decide(fuseschema.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "stable"}); d.Outcome != fuse.Degrade || d.Fallback != "small" {
		t.Fatalf("Decide(A) = %v %q, want degrade to small", d.Outcome, d.Fallback)
	}
	base := g.Stats()
	if base.Applied == 0 || len(g.ChangesSeen()) != int(base.Applied) {
		t.Fatalf("applied %d, OnChange calls %d", base.Applied, len(g.ChangesSeen()))
	}

	// While following: every kind of bad command, then a good one.
	valid5 := Sign(Cmd(targetA, 5, fuseschema.ActionHalfOpen, T0, ttl), "k1")
	forged := valid5
	forged.Action = fuseschema.ActionClose // content changed after signing
	forged.State, forged.Level, forged.ThrottleFraction = fuseschema.StateClosed, 0, 0
	replayed := Sign(Cmd(targetA, 4, fuseschema.ActionDegrade, issued, ttl), "k1")
	reordered := Sign(Cmd(targetA, 2, fuseschema.ActionHalfOpen, issued, ttl), "k1")
	expired := Sign(Cmd(targetB, 8, fuseschema.ActionTrip, T0.Add(-2*time.Hour), ttl), "k1")
	unknown := Sign(Cmd(targetA, 5, fuseschema.ActionClose, T0, ttl), "k9")
	unsigned := Cmd(targetA, 5, fuseschema.ActionClose, T0, ttl)
	garbage := &kgo.Record{Topic: Topic, Key: []byte(targetA.String()), Value: []byte(`{"schema":"fusebox.fuse_command.v1"}`)}
	k.Produce(t, Record(t, forged), Record(t, replayed), Record(t, reordered), Record(t, expired),
		Record(t, unknown), Record(t, unsigned), garbage, Record(t, valid5))

	want := map[fuse.RejectReason]uint64{
		fuse.RejectBadSignature: 1, fuse.RejectDuplicate: 1, fuse.RejectStale: 1, fuse.RejectExpired: 1,
		fuse.RejectUnknownKey: 1, fuse.RejectUnsigned: 1, fuse.RejectMalformed: 1,
	}
	Eventually(t, "the live commands", func() bool { return g.Stats().Records >= base.Records+8 })
	st := g.Stats()
	for _, r := range fuse.RejectReasons {
		if got := st.Rejected[r] - base.Rejected[r]; got != want[r] {
			t.Errorf("rejected %s: %d, want %d", r, got, want[r])
		}
	}
	if st.Applied != base.Applied+1 {
		t.Fatalf("applied %d live commands, want 1", st.Applied-base.Applied)
	}
	mustState(t, g, targetA, 5, fuseschema.ActionHalfOpen)
	mustState(t, g, targetB, 7, fuseschema.ActionThrottle)
	ch := g.ChangesSeen()
	last := ch[len(ch)-1]
	if last[0].Version != 4 || last[1].Version != 5 || last[1].Target != targetA {
		t.Fatalf("last OnChange (v%d → v%d %s), want A v4 → v5", last[0].Version, last[1].Version, last[1].Target)
	}
	d := g.Decide(targetA)
	if d.Outcome != fuse.Reject || !d.Probe || d.Fraction != 0.1 {
		t.Fatalf("Decide(A) half-open = %+v", d)
	}

	// Time passes: A's command expires and the gateway fails open.
	clock.Set(T0.Add(ttl + time.Second))
	if _, ok := g.State(targetA); ok {
		t.Fatalf("State returned an expired command")
	}
	if d := g.Decide(targetA); d.Outcome != fuse.Allow || d.Matched {
		t.Fatalf("Decide after expiry = %v matched %v, want allow", d.Outcome, d.Matched)
	}
}

// RunRotation checks key rotation: during the overlap commands signed with
// the old and the new key are both applied; after the old key's not-after
// its commands are rejected (key_retired) and the new key's still applied.
func RunRotation(t *testing.T, newSource NewSource) {
	k := Setup(t)
	clock := NewClock(T0)
	retire := T0.Add(time.Hour)
	ring, err := fuse.NewKeyring("new", mustKey(t, "old", retire), mustKey(t, "new", time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	g := Start(t, newSource(k.Brokers, Topic), fuse.WithKeyring(ring), fuse.WithClock(clock.Now))
	const ttl = 24 * time.Hour

	k.Produce(t, Record(t, Sign(Cmd(targetA, 1, fuseschema.ActionTrip, T0, ttl), "old")))
	k.Produce(t, Record(t, Sign(Cmd(targetA, 2, fuseschema.ActionHalfOpen, T0, ttl), "new")))
	k.Produce(t, Record(t, Sign(Cmd(targetB, 1, fuseschema.ActionTrip, T0, ttl), "old")))
	Eventually(t, "the overlap commands", func() bool { return g.Stats().Applied == 3 })
	mustState(t, g, targetA, 2, fuseschema.ActionHalfOpen)

	clock.Set(retire.Add(time.Second))
	k.Produce(t, Record(t, Sign(Cmd(targetB, 2, fuseschema.ActionClose, retire, ttl), "old")))
	k.Produce(t, Record(t, Sign(Cmd(targetA, 3, fuseschema.ActionClose, retire, ttl), "new")))
	Eventually(t, "the post-retirement commands", func() bool { return g.Stats().Records == 5 })
	st := g.Stats()
	if st.Rejected[fuse.RejectKeyRetired] != 1 || st.Applied != 4 {
		t.Fatalf("after retirement: key_retired %d applied %d, want 1 and 4", st.Rejected[fuse.RejectKeyRetired], st.Applied)
	}
	mustState(t, g, targetB, 1, fuseschema.ActionTrip)
	mustState(t, g, targetA, 3, fuseschema.ActionClose)
}

func mustKey(t testing.TB, id string, notAfter time.Time) fuse.Key {
	t.Helper()
	key, err := fuse.NewKey(id, Secret(id), notAfter)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// SameBytes reports whether the package signer and the test signer agree.
func SameBytes(a, b fuseschema.FuseCommand) error {
	x, err := a.MarshalJSON()
	if err != nil {
		return err
	}
	y, err := b.MarshalJSON()
	if err != nil {
		return err
	}
	if !bytes.Equal(x, y) {
		return errors.New("commands differ:\n" + string(x) + "\n" + string(y))
	}
	return nil
}
