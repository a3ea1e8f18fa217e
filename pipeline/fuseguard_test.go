package pipeline_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// TestFuseGuardInPipeline: a running fusebox repairs its fuse topic. Once
// it has published commands, someone writes a tombstone for a target
// whose command is in effect; within seconds the latest record of that
// target is fusebox's command again, byte for byte.
func TestFuseGuardInPipeline(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := loadConfig(t, k.Brokers, "")
	sc := traffic.Demo()
	sc.Rate = 60
	sc.Incidents = []traffic.Incident{{Name: "errors", Kind: traffic.ErrorBurst, Start: 6 * time.Minute, End: 12 * time.Minute,
		Target: traffic.Target{Tenant: "acme", Service: "chat"}, Magnitude: 0.5}}
	publish(t, k, sc, time.Unix(1_800_000_000, 0), 15*time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	p, err := pipeline.New(ctx, pipeline.Options{Config: cfg, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Guard == nil {
		t.Fatal("no fuse guard with the Kafka sink on")
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	// The first command fusebox published.
	fuseTopic := cfg.Topics.Fuse
	var first *kgo.Record
	testharness.Eventually(t, 40*time.Second, "a fuse command", func() bool {
		if recs := k.ReadAll(t, fuseTopic, 1, 2*time.Second); len(recs) > 0 {
			first = recs[0]
		}
		return first != nil
	})
	testharness.Eventually(t, 10*time.Second, "the guard to read it", func() bool { return p.Guard.Ready() && p.Guard.Stats().Targets > 0 })

	k.Produce(t, &kgo.Record{Topic: fuseTopic, Key: first.Key, Value: nil})
	start := time.Now()
	testharness.Eventually(t, 10*time.Second, "the repair", func() bool {
		var last []byte
		for _, r := range k.ReadToEnd(t, fuseTopic) {
			if bytes.Equal(r.Key, first.Key) {
				last = r.Value
			}
		}
		return last != nil && p.Guard.Stats().Republished > 0
	})
	t.Logf("repaired in %v; guard %+v", time.Since(start), p.Guard.Stats())
}
