package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// time.checkpoint_records reaches the keyed stage: with the wall-time
// trigger an hour away, a busy partition still checkpoints every
// checkpoint_records records (so its consumer, bounded at 4x that many
// unacknowledged records, never stalls waiting for a checkpoint).
func TestKafkaCheckpointRecordsTriggersCheckpoints(t *testing.T) {
	k := testharness.StartBroker(t)
	const every = 1000
	y := "kafka:\n  brokers: [" + k.Brokers[0] + "]\n" +
		"time: {idle_source_timeout: 1s, checkpoint_every: 1h, checkpoint_records: 1000, allowed_lateness: 5s}\n" +
		"topics: {keyed_partitions: 1}\n" +
		"signing: {insecure_unsigned: true}\n" + slos
	cfg, err := config.Parse("test.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	sc := traffic.Demo()
	sc.Rate = 60
	sc.Incidents = nil
	publish(t, k, sc, time.Unix(1_800_000_000, 0), 30*time.Minute)

	var mu sync.Mutex
	var offsets []int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := pipeline.New(ctx, pipeline.Options{Config: cfg, Logger: testLogger(t),
		OnCheckpoint: func(_ int32, next int64) {
			mu.Lock()
			offsets = append(offsets, next)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	// The router writes ~4,700 keyed records for 30 minutes at 60
	// calls/s (fetched in batches of hundreds to thousands); wait for two
	// checkpoints.
	var n int
	if !testharness.Poll(60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n = len(offsets)
		return n >= 2
	}) {
		t.Fatalf("%d checkpoints in 60s with checkpoint_every 1h and checkpoint_records %d (keyed stage %+v)", n, every, p.Keyed().Stats())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("checkpoint offsets: %v", offsets)
	// Every checkpoint but the last (which may come from the partition
	// going quiet, or from shutdown) covers at least checkpoint_records
	// more records than the one before.
	prev := int64(0)
	for i, off := range offsets[:len(offsets)-1] {
		if off-prev < every {
			t.Errorf("checkpoint %d at offset %d, %d records after the previous: want >= %d (offsets %v)", i, off, off-prev, every, offsets)
		}
		prev = off
	}
}
