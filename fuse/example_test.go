package fuse_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// A gateway follows the fuse topic and asks, per request, what to do. The
// example runs its own in-process broker and publishes one signed command
// the way fusebox does.
func ExampleClient() {
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, fuse.DefaultTopic))
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	secret := sha256.Sum256([]byte("example only: use 32 random bytes"))
	ring, err := fuse.ParseKeyring("k1:" + hex.EncodeToString(secret[:]))
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

	// fusebox's side: sign and publish a degrade command for one model.
	signer, _ := fuse.NewSigner(ring)
	cmd, _ := signer.Sign(fuseschema.FuseCommand{
		Target: fuseschema.Key{Tenant: "*", Service: "chat", Model: "big", Variant: "*"},
		Action: fuseschema.ActionDegrade, Level: 1, State: fuseschema.StateOpen, Version: 1,
		IssuedAtUnixNano: now.UnixNano(), ExpiresAtUnixNano: now.Add(15 * time.Minute).UnixNano(),
		Fallback: "small",
		Reasons:  []fuseschema.Reason{{VerdictID: "7df3f31a542270fd0b8b05fa67947a57", Text: "tail breach"}},
	})
	value, _ := cmd.MarshalJSON()
	pub, _ := kgo.NewClient(kgo.SeedBrokers(brokers...))
	pub.ProduceSync(context.Background(), &kgo.Record{Topic: fuse.DefaultTopic, Key: []byte(cmd.Target.String()), Value: value})
	pub.Close()

	// The gateway's side.
	c, err := fuse.NewClient(fuse.WithBrokers(brokers...), fuse.WithKeyring(ring),
		fuse.WithClock(func() time.Time { return now })) // omit WithClock in production: time.Now
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	for _, k := range []fuseschema.Key{
		{Tenant: "acme", Service: "chat", Model: "big", Variant: "stable"},
		{Tenant: "acme", Service: "chat", Model: "small", Variant: "stable"},
	} {
		d := c.Decide(k)
		fmt.Println(k.Model, d.Outcome, d.Fallback)
	}
	// Output:
	// big degrade small
	// small allow
}

// Admit turns a throttle or half-open decision into one request's outcome.
func ExampleDecision_Admit() {
	d := fuse.Decision{Outcome: fuse.Reject, Probe: true, Fraction: 0.1} // a half-open trip
	fmt.Println(d.Admit(0.05), d.Admit(0.5))
	t := fuse.Decision{Outcome: fuse.Throttle, Fraction: 0.25}
	fmt.Println(t.Admit(0.2), t.Admit(0.9))
	// Output:
	// allow reject
	// allow reject
}
