package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/schemas"
)

// summarySink writes the workers' evaluation summaries to
// topics.summaries for the incident stage: partition FNV-1a(SLO) mod the
// topic's partitions, so that one stage sees every keyed partition's
// summaries of an SLO. It is one of the keyed stage's sinks, so a
// checkpoint flushes it before it saves the worker's snapshot: a
// summary is never lost, and the ones a restarted worker writes again
// the stage drops.
type summarySink struct {
	cl         *kgo.Client // a ManualPartitioner client (the router's)
	topic      string
	partitions int32
	mu         sync.Mutex
	err        error
}

func (s *summarySink) Write(ctx context.Context, out schemas.Output) error {
	for i := range out.Summaries {
		sum := &out.Summaries[i]
		b, err := schemas.MarshalSummaryJSON(sum)
		if err != nil {
			return err
		}
		p := int32(schemas.TenantHash(sum.SLO) % uint32(s.partitions))
		s.cl.Produce(ctx, &kgo.Record{Topic: s.topic, Partition: p, Key: []byte(sum.SLO), Value: b}, func(_ *kgo.Record, err error) {
			if err != nil {
				s.mu.Lock()
				if s.err == nil {
					s.err = err
				}
				s.mu.Unlock()
			}
		})
	}
	return nil
}

// Flush waits for every summary written so far to be acknowledged; a
// failed one fails the flush (and so the checkpoint: the worker replays).
func (s *summarySink) Flush(ctx context.Context) error {
	if err := s.cl.Flush(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.err; err != nil {
		s.err = nil
		return fmt.Errorf("summaries: %w", err)
	}
	return nil
}

// Close flushes; the client is the router's and closes with it.
func (s *summarySink) Close(ctx context.Context) error { return s.Flush(ctx) }
