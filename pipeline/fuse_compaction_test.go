package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestKafkaGatewayRebuildsFuseStateAfterCompaction: the fuse topic fusebox
// creates is compacted for real (on Apache Kafka by its log cleaner, with
// the harness's fast-compaction settings; on kfake at once), and a gateway
// that starts after the compaction rebuilds, per target, exactly the
// newest command fusebox published — not an older one the cleaner kept,
// nothing the cleaner removed. Part of the Apache Kafka conformance set.
func TestKafkaGatewayRebuildsFuseStateAfterCompaction(t *testing.T) {
	k := testharness.StartBroker(t, testharness.WithFastCompaction())
	cfg := loadConfig(t, k.Brokers, "")
	sc := traffic.Demo()
	sc.Rate = 60
	// Two incidents on two targets, each tripping and then closing: the
	// topic holds several commands per target for the cleaner to remove.
	sc.Incidents = []traffic.Incident{
		{Name: "errors-acme", Kind: traffic.ErrorBurst, Start: 5 * time.Minute, End: 10 * time.Minute,
			Target: traffic.Target{Tenant: "acme", Service: "chat"}, Magnitude: 0.5},
		{Name: "errors-globex", Kind: traffic.ErrorBurst, Start: 8 * time.Minute, End: 14 * time.Minute,
			Target: traffic.Target{Tenant: "globex", Service: "search"}, Magnitude: 0.5},
	}
	end := publish(t, k, sc, time.Unix(1_800_000_000, 0), 30*time.Minute)

	run := startRunWith(t, pipeline.Options{Config: cfg, Logger: testLogger(t)})
	p := run.p

	// Wait until fusebox has worked through the traffic: every keyed
	// partition's watermark is within 2 minutes of its end (the incidents
	// end at 14 of 30 minutes), then the fuse topic stops growing for 5 s.
	// The quiet period alone passed at once, with no command, when the
	// pipeline was still joining its groups on a loaded machine.
	deadline := time.Now().Add(3 * time.Minute)
	want := end.Add(-2 * time.Minute).UnixNano()
	var wms map[int32]int64
	if !testharness.Poll(3*time.Minute, func() bool {
		wms = p.Keyed().Partitions()
		caughtUp := len(wms) == int(cfg.Topics.KeyedPartitions)
		for _, wm := range wms {
			caughtUp = caughtUp && wm >= want
		}
		return caughtUp
	}) {
		t.Fatalf("keyed watermarks %v after 3m, want all %d partitions at %v or later", wms, cfg.Topics.KeyedPartitions, time.Unix(0, want).UTC())
	}
	topic := cfg.Topics.Fuse
	n, stable := 0, time.Now()
	if !testharness.Poll(time.Until(deadline), func() bool {
		if m := len(k.ReadToEnd(t, topic)); m != n {
			n, stable = m, time.Now()
		}
		return time.Since(stable) >= 5*time.Second
	}) {
		t.Fatalf("the fuse topic still grows after 3m (%d records)", n)
	}
	published := p.Keyed().Stats().Commands
	run.stop(t)

	before := k.ReadToEnd(t, topic)
	newest := map[string]schemas.FuseCommand{}
	perKey := map[string]int{}
	var clock int64
	for _, r := range before {
		c, err := schemas.DecodeFuseCommand(r.Value)
		if err != nil {
			t.Fatalf("fusebox wrote an undecodable command at %d/%d: %v", r.Partition, r.Offset, err)
		}
		newest[string(r.Key)] = c
		perKey[string(r.Key)]++
		clock = max(clock, c.IssuedAtUnixNano)
	}
	if published <= int64(len(perKey)) {
		t.Fatalf("fusebox published %d commands on %d targets: nothing for the cleaner to do", published, len(perKey))
	}

	// Compact returns once no key repeats among the closed segments (on
	// Apache Kafka the cleaner may already have run while fusebox wrote).
	k.Compact(t, topic)
	after := k.ReadToEnd(t, topic)
	if int64(len(after)) >= published {
		t.Fatalf("the topic holds %d records of the %d commands fusebox published: compaction did not run", len(after), published)
	}

	// A gateway started now, its clock at the newest command's issue time
	// (so no command has expired for it).
	g, err := fuse.NewClient(fuse.WithBrokers(k.Brokers...), fuse.WithTopic(topic), fuse.WithInsecureUnsigned(),
		fuse.WithClock(func() time.Time { return time.Unix(0, clock) }))
	if err != nil {
		t.Fatal(err)
	}
	gctx, gcancel := context.WithCancel(context.Background())
	gdone := make(chan error, 1)
	go func() { gdone <- g.Run(gctx) }()
	defer func() {
		gcancel()
		if err := <-gdone; err != nil {
			t.Errorf("gateway Run: %v", err)
		}
	}()
	testharness.Eventually(t, 30*time.Second, "the gateway to catch up", g.Ready)

	checked := 0
	for key, want := range newest {
		got, ok := g.State(want.Target)
		if clock >= want.ExpiresAtUnixNano {
			continue // expired for the gateway too: no instruction
		}
		if !ok {
			t.Errorf("target %s: the gateway holds nothing; fusebox's newest is %s v%d", key, want.Action, want.Version)
			continue
		}
		if got.Version != want.Version || got.Action != want.Action || got.IssuedAtUnixNano != want.IssuedAtUnixNano {
			t.Errorf("target %s: the gateway holds %s v%d, fusebox's newest is %s v%d", key, got.Action, got.Version, want.Action, want.Version)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no unexpired command to check")
	}
	t.Logf("%s broker: %d commands published on %d targets, %d records before the last compaction, %d after; %d targets rebuilt",
		testharness.BrokerKind(t), published, len(perKey), len(before), len(after), checked)
}
