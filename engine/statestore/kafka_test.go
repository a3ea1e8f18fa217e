package statestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newStore(t *testing.T, k *testharness.Kafka, topic string) *Store {
	t.Helper()
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ensureTopic(ctx, cl, topic, 3); err != nil {
		t.Fatal(err)
	}
	if err := ensureTopic(ctx, cl, topic, 3); err != nil {
		t.Fatalf("ensureTopic on an existing topic: %v", err)
	}
	s := New(cl, topic, k.Brokers)
	s.chunk = 1000 // many chunks from small snapshots
	return s
}

func random(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestKafkaSaveLoadGenerationsAndCompaction(t *testing.T) {
	k := testharness.StartBroker(t, testharness.WithFastCompaction())
	ctx := context.Background()
	s := newStore(t, k, "state")
	if _, found, err := s.Load(ctx, 1); err != nil || found {
		t.Fatalf("empty topic: found=%v err=%v", found, err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	var last [3][]byte
	for gen := 0; gen < 4; gen++ {
		for p := int32(0); p < 3; p++ {
			snap := random(r, 500+r.IntN(4000)) // 1 to 5 chunks
			if gen == 3 && p == 0 {
				snap = nil // an empty snapshot is a snapshot too (the last: loaded below)
			}
			if err := s.Save(ctx, p, snap); err != nil {
				t.Fatal(err)
			}
			last[p] = snap
		}
	}
	k.Compact(t, "state")
	// A fresh store (another process after a rebalance) reads the newest.
	s2 := newStore(t, k, "state")
	for p := int32(0); p < 3; p++ {
		got, found, err := s2.Load(ctx, p)
		if err != nil || !found || !bytes.Equal(got, last[p]) {
			t.Fatalf("partition %d: found=%v err=%v, %d bytes, want the last %d", p, found, err, len(got), len(last[p]))
		}
	}
	// It continues the generations: its next save wins over the old ones.
	next := random(r, 2500)
	if err := s2.Save(ctx, 0, next); err != nil {
		t.Fatal(err)
	}
	got, _, err := newStore(t, k, "state").Load(ctx, 0)
	if err != nil || !bytes.Equal(got, next) {
		t.Fatalf("after a save by the second store: %v, %d bytes", err, len(got))
	}
}

func TestKafkaCrashBeforeManifestKeepsThePreviousCheckpoint(t *testing.T) {
	k := testharness.StartBroker(t, testharness.WithFastCompaction())
	ctx := context.Background()
	s := newStore(t, k, "state")
	r := rand.New(rand.NewPCG(2, 2))
	good := random(r, 3500)
	if err := s.Save(ctx, 2, good); err != nil {
		t.Fatal(err)
	}
	// A crash after writing the chunks of the next generation but before
	// its manifest: the chunks are there, the manifest is the old one.
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < 3; i++ {
		recs = append(recs, &kgo.Record{Topic: "state", Partition: 2, Key: []byte(legacyChunkKey(2, 2, i)), Value: random(r, 1000)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	k.Compact(t, "state")
	got, found, err := newStore(t, k, "state").Load(ctx, 2)
	if err != nil || !found || !bytes.Equal(got, good) {
		t.Fatalf("found=%v err=%v: want the last complete checkpoint", found, err)
	}
}

func TestKafkaCorruptCheckpointIsAnError(t *testing.T) {
	k := testharness.StartBroker(t, testharness.WithFastCompaction())
	ctx := context.Background()
	s := newStore(t, k, "state")
	if err := s.Save(ctx, 0, random(rand.New(rand.NewPCG(3, 3)), 2500)); err != nil {
		t.Fatal(err)
	}
	// Overwrite one chunk of the current generation.
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "state", Partition: 0, Key: []byte(legacyChunkKey(0, 1, 1)), Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := newStore(t, k, "state").Load(ctx, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load of a damaged checkpoint: %v, want ErrCorrupt", err)
	}
}

// ensureTopic creates a state topic (compacted, partitions partitions) if
// it does not exist, as the pipeline does at start.
func ensureTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	adm := kadm.NewClient(cl)
	compact := "compact"
	resp, err := adm.CreateTopic(ctx, partitions, -1, map[string]*string{"cleanup.policy": &compact}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		return fmt.Errorf("statestore: create %s: %w", topic, err)
	}
	return nil
}

// TestDeploymentsShareAStateTopic: two deployments checkpoint the same
// partitions of one state topic; each restores its own, skips and counts
// the other's, and neither tombstones the other's chunks. A legacy
// (unprefixed) checkpoint is restored only by a store told to.
func TestDeploymentsShareAStateTopic(t *testing.T) {
	k := testharness.StartKafka(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 4))
	legacy := newStore(t, k, "state") // a fusebox from before deployment ids
	old := random(r, 2200)
	if err := legacy.Save(ctx, 1, old); err != nil {
		t.Fatal(err)
	}
	a, b := newStore(t, k, "state"), newStore(t, k, "state")
	a.SetDeployment("alpha", true, nil)
	b.SetDeployment("beta", false, nil)
	if got, found, err := a.Load(ctx, 1); err != nil || !found || !bytes.Equal(got, old) {
		t.Fatalf("alpha (legacy on) over a legacy checkpoint: found=%v err=%v", found, err)
	}
	if _, found, err := b.Load(ctx, 1); err != nil || found {
		t.Fatalf("beta (legacy off) restored a legacy checkpoint: found=%v err=%v", found, err)
	}
	if b.Foreign() == 0 {
		t.Fatal("beta did not count the legacy checkpoint's records as foreign")
	}
	var wantA, wantB []byte
	for gen := 0; gen < 3; gen++ { // several generations: tombstones of one must not hit the other
		wantA, wantB = random(r, 1500+r.IntN(3000)), random(r, 1500+r.IntN(3000))
		if err := a.Save(ctx, 1, wantA); err != nil {
			t.Fatal(err)
		}
		if err := b.Save(ctx, 1, wantB); err != nil {
			t.Fatal(err)
		}
	}
	k.Cluster.Compact()
	a2, b2 := newStore(t, k, "state"), newStore(t, k, "state")
	a2.SetDeployment("alpha", true, nil)
	b2.SetDeployment("beta", true, nil)
	if got, found, err := a2.Load(ctx, 1); err != nil || !found || !bytes.Equal(got, wantA) {
		t.Fatalf("alpha restored found=%v err=%v %d bytes, want its own %d", found, err, len(got), len(wantA))
	}
	if got, found, err := b2.Load(ctx, 1); err != nil || !found || !bytes.Equal(got, wantB) {
		t.Fatalf("beta restored found=%v err=%v %d bytes, want its own %d", found, err, len(got), len(wantB))
	}
	if a2.Foreign() == 0 || b2.Foreign() == 0 {
		t.Fatalf("foreign records counted: alpha %d, beta %d; want both > 0", a2.Foreign(), b2.Foreign())
	}
	// Another partition: nothing of either.
	if _, found, err := a2.Load(ctx, 2); err != nil || found {
		t.Fatalf("partition 2: found=%v err=%v", found, err)
	}
}

// A namespace's checkpoints sit beside the keyed partition's on the same
// partition: each restores its own, and neither counts the other's
// records as another deployment's.
func TestNamespaceBesideTheKeyedCheckpoint(t *testing.T) {
	k := testharness.StartKafka(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 5))
	keyed := newStore(t, k, "state")
	keyed.SetDeployment("alpha", false, nil)
	inc := keyed.Namespace("incidents")
	wantK, wantI := random(r, 2500), random(r, 1800)
	for gen := 0; gen < 2; gen++ {
		if err := keyed.Save(ctx, 0, wantK); err != nil {
			t.Fatal(err)
		}
		if err := inc.Save(ctx, 0, wantI); err != nil {
			t.Fatal(err)
		}
	}
	k.Cluster.Compact()
	keyed2 := newStore(t, k, "state")
	keyed2.SetDeployment("alpha", false, nil)
	inc2 := keyed2.Namespace("incidents")
	if got, found, err := keyed2.Load(ctx, 0); err != nil || !found || !bytes.Equal(got, wantK) {
		t.Fatalf("keyed: found=%v err=%v %d bytes, want %d", found, err, len(got), len(wantK))
	}
	if got, found, err := inc2.Load(ctx, 0); err != nil || !found || !bytes.Equal(got, wantI) {
		t.Fatalf("incidents: found=%v err=%v %d bytes, want %d", found, err, len(got), len(wantI))
	}
	if keyed2.Foreign() != 0 || inc2.Foreign() != 0 {
		t.Fatalf("foreign: keyed %d, incidents %d; want 0", keyed2.Foreign(), inc2.Foreign())
	}
}
