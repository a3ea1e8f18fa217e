package fuse_test

import (
	"math"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
	"github.com/fusebox-dev/fusebox/fuse/internal/fusetest"
)

// TestGatewayNeverStuck is issue 12's attack on a running gateway and on
// one started later, on the real (kfake) broker: a validly signed command
// with version 2^64−1 blocks no command issued after it, and once it has
// expired it blocks nothing at all (its version stops counting); a command
// issued before the held, unexpired one is still stale.
func TestGatewayNeverStuck(t *testing.T) {
	k := fusetest.Setup(t)
	clock := fusetest.NewClock(fusetest.T0)
	ring, err := fuse.NewKeyring("", mustKey(t, "k1"))
	if err != nil {
		t.Fatal(err)
	}
	a := fuseschema.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}
	g := fusetest.Start(t, kgoSource(k.Brokers, fusetest.Topic), fuse.WithKeyring(ring), fuse.WithClock(clock.Now))
	state := func() fuseschema.FuseCommand {
		c, _ := g.State(a)
		return c
	}
	send := func(c fuseschema.FuseCommand) {
		t.Helper()
		before := g.Stats().Records
		k.Produce(t, fusetest.Record(t, fusetest.Sign(c, "k1")))
		fusetest.Eventually(t, "the command", func() bool { return g.Stats().Records > before })
	}
	T0 := fusetest.T0

	huge := fusetest.Cmd(a, math.MaxUint64, fuseschema.ActionTrip, T0.Add(-time.Minute), 2*time.Minute)
	send(huge)
	if c := state(); c.Version != math.MaxUint64 {
		t.Fatalf("the 2^64-1 command was not applied: %+v", c)
	}
	// Issued after it, with a small version: applied at once.
	send(fusetest.Cmd(a, 5, fuseschema.ActionClose, T0, time.Hour))
	if c := state(); c.Version != 5 || c.Action != fuseschema.ActionClose {
		t.Fatalf("a later-issued command is blocked by version 2^64-1: held v%d %s", c.Version, c.Action)
	}

	// A 2^64-1 command issued ahead (e.g. by a fusebox whose event time
	// ran ahead): while it holds, an earlier-issued command is stale ...
	send(fusetest.Cmd(a, math.MaxUint64, fuseschema.ActionTrip, T0.Add(10*time.Minute), time.Minute))
	stale := g.Stats().Rejected[fuse.RejectStale]
	send(fusetest.Cmd(a, 6, fuseschema.ActionDegrade, T0.Add(5*time.Minute), time.Hour))
	if g.Stats().Rejected[fuse.RejectStale] != stale+1 || state().Version != math.MaxUint64 {
		t.Fatalf("an earlier-issued command replaced an unexpired later one: held %+v", state())
	}
	// ... and once it expires it counts for nothing: the next command
	// applies without a gateway restart.
	clock.Set(T0.Add(12 * time.Minute))
	send(fusetest.Cmd(a, 7, fuseschema.ActionDegrade, T0.Add(6*time.Minute), time.Hour))
	if c := state(); c.Version != 7 || c.Action != fuseschema.ActionDegrade {
		t.Fatalf("running gateway stuck after the 2^64-1 command expired: held v%d %s", c.Version, c.Action)
	}
	if d := g.Decide(a); d.Outcome != fuse.Degrade {
		t.Fatalf("Decide = %v, want degrade", d.Outcome)
	}

	// A gateway started now, before and after compaction, rebuilds the
	// same state from the topic.
	for _, compact := range []bool{false, true} {
		if compact {
			k.Cluster.Compact()
		}
		g2 := fusetest.Start(t, kgoSource(k.Brokers, fusetest.Topic), fuse.WithKeyring(ring), fuse.WithClock(clock.Now))
		if c, ok := g2.State(a); !ok || c.Version != 7 {
			t.Fatalf("restarted gateway (compacted %v): v%d ok %v, want v7", compact, c.Version, ok)
		}
	}
}
