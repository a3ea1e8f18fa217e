package router

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNewRefusesAProducerThatCouldLoseRecords: New refuses a client with
// acks other than all, or without idempotence, before it talks to a
// broker; kgo's defaults pass (the broker, unreachable here, is what
// fails then).
func TestNewRefusesAProducerThatCouldLoseRecords(t *testing.T) {
	cfg := Config{KeyedTopic: "k", SourceTopics: []string{"s"}}
	for name, opts := range map[string][]kgo.Opt{
		"acks=1":         {kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()},
		"acks=0":         {kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()},
		"no idempotence": {kgo.DisableIdempotentWrite()},
	} {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(context.Background(), cl, cfg)
		cl.Close()
		if !errors.Is(err, ErrNotDurable) {
			t.Errorf("%s: %v, want ErrNotDurable", name, err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(ctx, cl, cfg); err == nil || errors.Is(err, ErrNotDurable) {
		t.Errorf("kgo's defaults: %v, want a broker error", err)
	}
}
