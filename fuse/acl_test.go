package fuse_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
	"github.com/fusebox-dev/fusebox/fuse/internal/fusetest"
)

// TestACLsOnlyFuseboxWrites is the fuse topic's ACL set of docs/gateways.md
// on a broker that enforces ACLs (kfake.EnableACLs, SASL PLAIN): fusebox's
// principal may write (and read, for its Guard) fusebox.fuse; a
// gateway's principal may only read it. The gateway's write is refused by
// the broker with TOPIC_AUTHORIZATION_FAILED, while its fuse.Client still
// reads and applies fusebox's commands.
func TestACLsOnlyFuseboxWrites(t *testing.T) {
	topic := fuse.DefaultTopic
	lit := kmsg.ACLResourcePatternTypeLiteral
	acl := func(op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: lit, Operation: op, Allow: true}
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "admin-secret"), kfake.EnableACLs(),
		kfake.User("PLAIN", "fusebox", "fusebox-secret", acl(kmsg.ACLOperationWrite), acl(kmsg.ACLOperationRead), acl(kmsg.ACLOperationDescribe)),
		kfake.User("PLAIN", "gateway", "gateway-secret", acl(kmsg.ACLOperationRead), acl(kmsg.ACLOperationDescribe)),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	as := func(user, pass string, opts ...kgo.Opt) []kgo.Opt {
		return append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}, opts...)
	}
	client := func(opts []kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	compact := "compact"
	if _, err := kadm.NewClient(client(as("admin", "admin-secret"))).CreateTopic(ctx, 3, 1, map[string]*string{"cleanup.policy": &compact}, topic); err != nil {
		t.Fatalf("create topic as admin: %v", err)
	}

	cmd := fusetest.Sign(fusetest.Cmd(fuseschema.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}, 1, fuseschema.ActionTrip, fusetest.T0, time.Hour), "k1")
	rec := fusetest.Record(t, cmd)
	rec.Topic = topic
	if err := client(as("fusebox", "fusebox-secret")).ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("fusebox's principal could not write the fuse topic: %v", err)
	}

	// The gateway tries to erase the trip with a tombstone. (With the
	// idempotent producer the broker refuses even earlier, at
	// InitProducerID, with CLUSTER_AUTHORIZATION_FAILED; without it the
	// produce itself is refused.)
	tomb := &kgo.Record{Topic: topic, Key: rec.Key}
	err = client(as("gateway", "gateway-secret", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(5*time.Second))).ProduceSync(ctx, tomb).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("gateway's write: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	ring, _ := fuse.NewKeyring("", mustKey(t, "k1"))
	g := fusetest.Start(t, fuse.NewKgoSource(topic, as("gateway", "gateway-secret")...), fuse.WithKeyring(ring),
		fuse.WithClock(func() time.Time { return fusetest.T0 }))
	if c, ok := g.State(cmd.Target); !ok || c.Version != 1 {
		t.Fatalf("gateway reading with read-only ACLs: v%d ok %v, want fusebox's v1", c.Version, ok)
	}
}
