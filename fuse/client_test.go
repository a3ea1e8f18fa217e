package fuse_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
	"github.com/fusebox-dev/fusebox/fuse/internal/fusetest"
)

func kgoSource(brokers []string, topic string) fuse.Source {
	return fuse.NewKgoSource(topic, kgo.SeedBrokers(brokers...))
}

func TestGatewayKgo(t *testing.T)     { fusetest.RunCore(t, kgoSource) }
func TestKeyRotationKgo(t *testing.T) { fusetest.RunRotation(t, kgoSource) }

// The default source (WithBrokers) is the franz-go one; a topic that does
// not exist yet counts as empty, and commands appear once it is created.
func TestDefaultSourceAndMissingTopic(t *testing.T) {
	k := fusetest.Setup(t)
	ring, _ := fuse.NewKeyring("", mustKey(t, "k1"))
	c, err := fuse.NewClient(fuse.WithBrokers(k.Brokers...), fuse.WithTopic("fuse.later"), fuse.WithKeyring(ring),
		fuse.WithKgoOpts(kgo.MetadataMinAge(10*time.Millisecond), kgo.MetadataMaxAge(100*time.Millisecond)),
		fuse.WithClock(func() time.Time { return fusetest.T0 }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatalf("WaitReady on a missing topic: %v", err)
	}
	if err := c.Run(ctx); !errors.Is(err, fuse.ErrAlreadyRunning) {
		t.Fatalf("second Run: %v", err)
	}
	cmd := fusetest.Sign(fusetest.Cmd(fuseschema.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}, 1, fuseschema.ActionTrip, fusetest.T0, time.Hour), "k1")
	r := fusetest.Record(t, cmd)
	r.Topic = "fuse.later"
	k.Produce(t, r) // auto-creates the topic
	fusetest.Eventually(t, "the command on the new topic", func() bool { return c.Stats().Applied == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestNewClientRequiresKeys(t *testing.T) {
	if _, err := fuse.NewClient(fuse.WithBrokers("127.0.0.1:1")); !errors.Is(err, fuse.ErrNoKeys) {
		t.Fatalf("no keyring: %v, want ErrNoKeys", err)
	}
	if _, err := fuse.NewClient(fuse.WithBrokers("127.0.0.1:1"), fuse.WithInsecureUnsigned()); err != nil {
		t.Fatalf("insecure: %v", err)
	}
	ring, _ := fuse.NewKeyring("", mustKey(t, "k1"))
	if _, err := fuse.NewClient(fuse.WithKeyring(ring)); err == nil {
		t.Fatalf("no brokers and no source accepted")
	}
}

// An insecure client applies unsigned commands and still verifies signed
// ones.
func TestInsecureClient(t *testing.T) {
	k := fusetest.Setup(t)
	ring, _ := fuse.NewKeyring("", mustKey(t, "k1"))
	g := fusetest.Start(t, kgoSource(k.Brokers, fusetest.Topic), fuse.WithInsecureUnsigned(), fuse.WithKeyring(ring),
		fuse.WithClock(func() time.Time { return fusetest.T0 }))
	a := fuseschema.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}
	forged := fusetest.Sign(fusetest.Cmd(a, 2, fuseschema.ActionClose, fusetest.T0, time.Hour), "k1")
	forged.Level = 1
	k.Produce(t, fusetest.Record(t, fusetest.Cmd(a, 1, fuseschema.ActionTrip, fusetest.T0, time.Hour)), fusetest.Record(t, forged))
	fusetest.Eventually(t, "both records", func() bool { return g.Stats().Records == 2 })
	if st := g.Stats(); st.Applied != 1 || st.Rejected[fuse.RejectBadSignature] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func mustKey(t testing.TB, id string) fuse.Key {
	t.Helper()
	k, err := fuse.NewKey(id, fusetest.Secret(id), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}
