package router

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/broker"
)

// TestRefreshWhileHandling: the metadata refresh (Run's goroutine, every
// 30 s) and the source partitions' handlers (the consumer's goroutines)
// share the keyed partition count; run under -race, this fails when it is
// a plain field (it did: cmd/fusebox/internal/loop's TestLoopCloses under -race).
func TestRefreshWhileHandling(t *testing.T) {
	ctx := context.Background()
	b, err := broker.Start(ctx, broker.Config{
		Listen:     "127.0.0.1:0",
		Partitions: 2,
		Topics:     []broker.TopicSpec{{Name: "keyed", Partitions: 2}, {Name: "spans", Partitions: 2}},
		LogLevel:   "none",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(b.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
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
