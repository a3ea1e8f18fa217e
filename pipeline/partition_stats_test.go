package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// historyStore is a StateStore that keeps every snapshot saved, in order,
// per partition.
type historyStore struct {
	mu    sync.Mutex
	saved map[int32][][]byte
}

func (h *historyStore) Load(_ context.Context, p int32) ([]byte, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.saved[p]; len(s) > 0 {
		return s[len(s)-1], true, nil
	}
	return nil, false, nil
}

func (h *historyStore) Save(_ context.Context, p int32, b []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.saved[p] = append(h.saved[p], b)
	return nil
}

// At every checkpoint of a running partition, Keyed.PartitionStats holds
// the counters of the snapshot just saved, and OnCheckpoint's offset is
// the snapshot's: TestKafkaE2EKilledBeforeCommit's child counts the verdicts the
// saved snapshots cover by it.
func TestPartitionStatsAtCheckpointAreTheSnapshots(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := loadConfig(t, k.Brokers, "")
	// Checkpoints inside the stream too (after any batch that brings 50
	// records), not only when a partition goes quiet.
	cfg.Time.CheckpointRecords = 50
	createTopics(t, k, cfg)
	sc := traffic.Demo()
	sc.Rate = 40
	end := publish(t, k, sc, time.Unix(1_800_000_000, 0), 8*time.Minute)

	type seen struct {
		next  int64
		stats engine.WorkerStats
		ok    bool // the partition was owned (not a checkpoint on close)
	}
	var (
		mu     sync.Mutex
		events = map[int32][]seen{}
		keyed  *engine.Keyed
	)
	store := &historyStore{saved: map[int32][][]byte{}}
	sink := &memSink{}
	parts := pipeline.Parts{
		Sinks: []engine.Sink{sink}, Store: store, Producer: k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())),
		NewConsumer: func(c ingest.Config) (pipeline.Consumer, error) { return ingest.NewFromConfig(c) },
		Close:       func() {},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := pipeline.Assemble(ctx, cfg, parts, testLogger(t), func(part int32, next int64) {
		mu.Lock()
		defer mu.Unlock()
		st, ok := keyed.PartitionStats()[part]
		events[part] = append(events[part], seen{next: next, stats: st, ok: ok})
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	keyed = p.Keyed()
	mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	// Wait until the verdicts are in and every partition has checkpointed
	// twice while running (after the last batches, the router's repeated
	// idle markers keep the partitions checkpointing every 500 ms): the
	// checkpoints on close, with the partition no longer owned, are not
	// what the test is about.
	want := end.Add(-2 * time.Minute).UnixNano()
	var reached int64
	var running int
	if !testharness.Poll(120*time.Second, func() bool {
		sink.mu.Lock()
		for _, v := range sink.verdicts {
			reached = max(reached, v.WindowEndUnixNano)
		}
		sink.mu.Unlock()
		mu.Lock()
		running = 0
		for _, evs := range events {
			n := 0
			for _, ev := range evs {
				if ev.ok {
					n++
				}
			}
			if n >= 2 {
				running++
			}
		}
		mu.Unlock()
		return reached >= want && running == int(cfg.Topics.KeyedPartitions)
	}) {
		t.Fatalf("after 120s verdicts reached %v (want %v), %d of %d partitions checkpointed twice while running",
			time.Unix(0, reached), time.Unix(0, want), running, cfg.Topics.KeyedPartitions)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	wcfg, err := config.WorkerConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	store.mu.Lock()
	defer store.mu.Unlock()
	compared, withVerdicts := 0, 0
	for part, evs := range events {
		saved := store.saved[part]
		if len(saved) != len(evs) {
			t.Fatalf("partition %d: %d snapshots saved, %d checkpoints reported", part, len(saved), len(evs))
		}
		for i, ev := range evs {
			if !ev.ok {
				continue
			}
			w, _, err := engine.RestoreWorker(wcfg, part, saved[i])
			if err != nil {
				t.Fatalf("partition %d checkpoint %d: %v", part, i, err)
			}
			if got := w.Stats(); got != ev.stats || w.NextOffset() != ev.next {
				t.Fatalf("partition %d checkpoint %d: PartitionStats %+v at offset %d, the saved snapshot %+v at offset %d",
					part, i, ev.stats, ev.next, got, w.NextOffset())
			}
			compared++
			if ev.stats.Verdicts > 0 {
				withVerdicts++
			}
		}
	}
	t.Logf("%d checkpoints of %d partitions compared with their snapshots, %d of them with verdicts", compared, len(events), withVerdicts)
	if compared == 0 || withVerdicts == 0 {
		t.Fatalf("%d checkpoints compared, %d with verdicts: nothing shown", compared, withVerdicts)
	}
}
