package fuse_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
	"github.com/fusebox-dev/fusebox/fuse/internal/fusetest"
)

// TestGuardUndoesCompactionAttacks is issue 12's attack on the compacted
// fuse topic, on the real (kfake) broker: someone without the signing key
// writes a tombstone for target A and re-publishes B's older, still
// unexpired trip after B's close. Without the Guard, compaction keeps the
// wrong records and a gateway starting later rebuilds the wrong state (B
// tripped, A forgotten). With the Guard following the topic, fusebox's
// current commands are re-published within seconds, so after compaction a
// late gateway rebuilds the right state; a gateway that was running never
// takes state from the tombstone.
func TestGuardUndoesCompactionAttacks(t *testing.T) {
	for _, withGuard := range []bool{false, true} {
		name := "without guard"
		if withGuard {
			name = "with guard"
		}
		t.Run(name, func(t *testing.T) { guardScenario(t, withGuard) })
	}
}

func guardScenario(t *testing.T, withGuard bool) {
	k := fusetest.Setup(t)
	clock := fusetest.NewClock(fusetest.T0)
	ring, err := fuse.NewKeyring("", mustKey(t, "k1"))
	if err != nil {
		t.Fatal(err)
	}
	T0 := fusetest.T0
	a := fuseschema.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "stable"}
	b := fuseschema.Key{Tenant: "acme", Service: "search", Model: "tiny", Variant: "canary"}
	aTrip := fusetest.Sign(fusetest.Cmd(a, 1, fuseschema.ActionTrip, T0, time.Hour), "k1")
	bTrip := fusetest.Sign(fusetest.Cmd(b, 1, fuseschema.ActionTrip, T0, time.Hour), "k1")
	bClose := fusetest.Sign(fusetest.Cmd(b, 2, fuseschema.ActionClose, T0.Add(time.Minute), time.Hour), "k1")

	// fusebox's Guard follows the topic from the start, as `fusebox run`
	// does (it re-publishes through the fuse sink's producer).
	var guard *fuse.Guard
	if withGuard {
		signer, err := fuse.NewSigner(ring)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pub.Close)
		publish := func(ctx context.Context, key, value []byte) error {
			return pub.ProduceSync(ctx, &kgo.Record{Topic: fusetest.Topic, Key: key, Value: value}).FirstErr()
		}
		if guard, err = fuse.NewGuard(kgoSource(k.Brokers, fusetest.Topic), signer, publish, clock.Now, nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- guard.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		fusetest.Eventually(t, "the guard ready", guard.Ready)
	}
	for _, c := range []fuseschema.FuseCommand{aTrip, bTrip, bClose} {
		k.Produce(t, fusetest.Record(t, c))
	}
	running := fusetest.Start(t, kgoSource(k.Brokers, fusetest.Topic), fuse.WithKeyring(ring), fuse.WithClock(clock.Now))
	if withGuard {
		fusetest.Eventually(t, "the guard saw fusebox's commands", func() bool { return guard.Stats().Records >= 3 })
	}

	// The attack: no signing key needed.
	start := time.Now()
	k.Produce(t, &kgo.Record{Topic: fusetest.Topic, Key: []byte(a.String()), Value: nil}) // tombstone
	k.Produce(t, fusetest.Record(t, bTrip))                                               // the older trip again
	if withGuard {
		fusetest.Eventually(t, "the guard's repair", func() bool { return guard.Stats().Republished >= 2 })
		took := time.Since(start)
		if took > 5*time.Second {
			t.Fatalf("repair took %v, want within seconds", took)
		}
		t.Logf("repair of 2 targets took %v", took)
		checkLatest(t, k, map[string][]byte{a.String(): mustJSON(t, aTrip), b.String(): mustJSON(t, bClose)})
		if st := guard.Stats(); st.Foreign != 2 || st.Targets != 2 {
			t.Fatalf("guard stats %+v: want 2 foreign records, 2 targets", st)
		}
	}

	// A running gateway never takes state from the tombstone, and the
	// replayed trip is stale for it.
	fusetest.Eventually(t, "the attack records", func() bool { return running.Stats().Records >= 5 })
	if c, ok := running.State(a); !ok || c.Version != 1 {
		t.Fatalf("running gateway after a tombstone: A v%d ok %v, want v1 kept", c.Version, ok)
	}
	if c, _ := running.State(b); c.Version != 2 || running.Stats().Rejected[fuse.RejectMalformed] != 1 {
		t.Fatalf("running gateway: B v%d, malformed %d; want v2 kept and the tombstone rejected", c.Version, running.Stats().Rejected[fuse.RejectMalformed])
	}

	// Compaction, then a gateway that starts later. kfake, like Kafka,
	// never cleans a partition's last (active) batch: other targets'
	// commands written after everything let compaction reach the records
	// under test.
	for i := 0; i < 12; i++ {
		f := fuseschema.Key{Tenant: "filler", Service: "s", Model: "m", Variant: string(rune('a' + i))}
		k.Produce(t, fusetest.Record(t, fusetest.Sign(fusetest.Cmd(f, 1, fuseschema.ActionClose, T0, time.Hour), "k1")))
	}
	k.Cluster.Compact()
	late := fusetest.Start(t, kgoSource(k.Brokers, fusetest.Topic), fuse.WithKeyring(ring), fuse.WithClock(clock.Now))
	ca, okA := late.State(a)
	cb, okB := late.State(b)
	if !withGuard {
		// The attack works when nobody repairs: A is forgotten, B is
		// tripped again by its old command.
		if okA || !okB || cb.Version != 1 || cb.Action != fuseschema.ActionTrip {
			t.Fatalf("without guard: late gateway has A %v, B v%d %s; the attack should show (A gone, B's old trip)", okA, cb.Version, cb.Action)
		}
		return
	}
	if !okA || ca.Version != 1 || ca.Action != fuseschema.ActionTrip || !okB || cb.Version != 2 || cb.Action != fuseschema.ActionClose {
		t.Fatalf("with guard: late gateway after compaction has A v%d %s (ok %v), B v%d %s (ok %v); want A v1 trip, B v2 close",
			ca.Version, ca.Action, okA, cb.Version, cb.Action, okB)
	}
}

func mustJSON(t *testing.T, c fuseschema.FuseCommand) []byte {
	t.Helper()
	v, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkLatest reads the topic and checks the latest record of each key.
func checkLatest(t *testing.T, k interface {
	ReadAll(testing.TB, string, int, time.Duration) []*kgo.Record
}, want map[string][]byte) {
	t.Helper()
	latest := map[string][]byte{}
	for _, r := range k.ReadAll(t, fusetest.Topic, 1<<30, 2*time.Second) {
		latest[string(r.Key)] = r.Value
	}
	for key, v := range want {
		if !bytes.Equal(latest[key], v) {
			t.Fatalf("latest record of %s = %q, want fusebox's current command %q", key, latest[key], v)
		}
	}
}
