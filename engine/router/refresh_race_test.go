package router

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/ingest"
)

// TestRefreshWhileHandling: the metadata refresh (Run's goroutine, every
// 30 s) and the source partitions' handlers (the consumer's goroutines)
// share the keyed partition count; run under -race, this fails when it is
// a plain field (it did: cmd/fusebox/internal/loop's TestLoopCloses under -race).
func TestRefreshWhileHandling(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "keyed", "spans"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	r, err := New(ctx, cl, Config{KeyedTopic: "keyed", SourceTopics: []string{"spans"}})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Handler("spans", 0)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 5 {
			if err := r.refresh(ctx); err != nil {
				t.Error(err)
			}
		}
	}()
	for i := range 50 {
		if err := h.Handle(ctx, &ingest.Batch{Topic: "spans", NextOffset: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if n := r.partitions.Load(); n != 2 {
		t.Fatalf("partitions %d, want 2", n)
	}
}
