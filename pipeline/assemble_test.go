package pipeline_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

// memSink and memStore are parts of the test's own making: Assemble must
// run the stages on whatever sinks, store and consumers it is given.
type memSink struct {
	mu       sync.Mutex
	verdicts []schemas.Verdict
	flushes  int
	closed   bool
}

func (s *memSink) Write(_ context.Context, out schemas.Output) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verdicts = append(s.verdicts, out.Verdicts...)
	return nil
}
func (s *memSink) Flush(context.Context) error { s.mu.Lock(); s.flushes++; s.mu.Unlock(); return nil }
func (s *memSink) Close(context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

type memStore struct {
	mu    sync.Mutex
	snaps map[int32][]byte
}

func (m *memStore) Load(_ context.Context, p int32) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.snaps[p]
	return b, ok, nil
}
func (m *memStore) Save(_ context.Context, p int32, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snaps[p] = b
	return nil
}

// countingConsumer counts the consumer's runs.
type countingConsumer struct {
	*ingest.Consumer
	runs *atomic.Int32
}

func (c countingConsumer) Run(ctx context.Context) error { c.runs.Add(1); return c.Consumer.Run(ctx) }

func TestAssembleRunsOnTheGivenParts(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := loadConfig(t, k.Brokers, "")
	createTopics(t, k, cfg)
	sc := traffic.Demo()
	sc.Rate, sc.Incidents = 40, nil
	end := publish(t, k, sc, time.Unix(1_800_000_000, 0), 8*time.Minute)

	sink, store := &memSink{}, &memStore{snaps: map[int32][]byte{}}
	var runs, built, closed atomic.Int32
	producer := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	parts := pipeline.Parts{
		Sinks: []engine.Sink{sink}, Store: store, Producer: producer,
		NewConsumer: func(c ingest.Config) (pipeline.Consumer, error) {
			built.Add(1)
			ic, err := ingest.NewFromConfig(c)
			if err != nil {
				return nil, err
			}
			return countingConsumer{ic, &runs}, nil
		},
		Close: func() { closed.Add(1) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := pipeline.Assemble(ctx, cfg, parts, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	want := end.Add(-2 * time.Minute).UnixNano()
	var reached int64
	if !testharness.Poll(30*time.Second, func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for _, v := range sink.verdicts {
			reached = max(reached, v.WindowEndUnixNano)
		}
		return reached >= want
	}) {
		t.Fatalf("verdicts in the given sink reached %v after 30s, want %v", time.Unix(0, reached), time.Unix(0, want))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	store.mu.Lock()
	defer store.mu.Unlock()
	if !sink.closed || sink.flushes == 0 || len(store.snaps) == 0 {
		t.Errorf("the given sink was flushed %d times, closed %v; the given store holds %d checkpoints", sink.flushes, sink.closed, len(store.snaps))
	}
	if built.Load() != 2 || runs.Load() != 2 || closed.Load() != 1 {
		t.Errorf("%d consumers built, %d run, Parts.Close called %d times; want 2, 2, 1", built.Load(), runs.Load(), closed.Load())
	}
}
