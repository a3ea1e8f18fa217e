package statestore

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaDefaultLimitsLargeSnapshot saves a 3 MB snapshot with the production
// chunk size (DefaultChunkBytes) and the pipeline's state client batch cap
// (1 MiB) to a state topic of default configs: on Apache Kafka
// (message.max.bytes 1,048,588) every chunk and every batch must fit, and
// a fresh store loads the snapshot back unchanged.
func TestKafkaDefaultLimitsLargeSnapshot(t *testing.T) {
	k := testharness.StartBroker(t)
	ctx := context.Background()
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if err := ensureTopic(ctx, cl, "state", 2); err != nil {
		t.Fatal(err)
	}
	snap := random(rand.New(rand.NewPCG(9, 9)), 3_000_000)
	s := New(cl, "state", k.Brokers)
	if s.chunk != DefaultChunkBytes {
		t.Fatalf("chunk %d, want DefaultChunkBytes", s.chunk)
	}
	for gen := 0; gen < 2; gen++ { // the second save deletes the first's chunks
		if err := s.Save(ctx, 1, snap); err != nil {
			t.Fatalf("save %d: %v", gen, err)
		}
	}
	got, found, err := New(k.Client(t), "state", k.Brokers).Load(ctx, 1)
	if err != nil || !found || !bytes.Equal(got, snap) {
		t.Fatalf("load: found=%v err=%v, %d bytes; want the %d-byte snapshot", found, err, len(got), len(snap))
	}
}
