package engine_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/ingest"
)

// countObserver counts the durations it is given.
type countObserver struct{ n atomic.Int64 }

func (o *countObserver) ObserveDuration(time.Duration) { o.n.Add(1) }

// TestKeyedCountsItsOwnEvents: the keyed stage times every batch it handles
// (KeyedConfig.BatchLatency) and counts its checkpoints (Checkpoints), the
// metrics pipeline reads, without a wrapper around its handler.
func TestKeyedCountsItsOwnEvents(t *testing.T) {
	lat := &countObserver{}
	calls := 0
	k, err := engine.NewKeyed(engine.KeyedConfig{
		Store: memStore{}, Sinks: []engine.Sink{&captureSink{}}, CheckpointEvery: time.Hour,
		Logger: slog.New(slog.DiscardHandler), BatchLatency: lat,
		OnCheckpoint: func(int32, int64) { calls++ },
		Worker:       engine.WorkerConfig{ConfigVersion: "test", KeyDims: engine.AllKeyDims()},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := k.Handler("keyed", 0)
	if _, err := h.(ingest.Starter).Start(ctx, -1); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		rec := &engine.KeyedRecord{Offset: int64(i), Source: engine.SourceRef{Topic: "otlp_spans", Offset: int64(i)}, SourceTopics: "otlp_spans:1"}
		if err := h.Handle(ctx, &ingest.Batch{Records: []ingest.Record{{Payload: rec}}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := lat.n.Load(); n != 3 {
		t.Errorf("batch latencies observed = %d, want 3", n)
	}
	if n := k.Checkpoints(); n != 0 {
		t.Errorf("checkpoints before close = %d, want 0", n)
	}
	h.Close(ctx, ingest.CloseShutdown)
	if n := k.Checkpoints(); n != 1 || calls != 1 {
		t.Errorf("checkpoints after close = %d (OnCheckpoint %d), want 1 (1)", n, calls)
	}
}
