package demo

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/gen"
)

// genResult is how the generator ended.
type genResult struct {
	sum gen.Summary
	err error
}

// generator publishes the scenario to the embedded broker in the
// background (gen.Run), as a service and an app would, and keeps its
// latest progress for the live view.
type generator struct {
	prod *kgo.Client
	// done receives gen.Run's result once.
	done chan genResult

	mu   sync.Mutex
	prog gen.Progress
}

// startGenerator starts gen.Run with gc (its progress every second) on a
// producer of brokerAddr until ctx ends or the scenario is published.
// Close it (the producer) after done has delivered or ctx has ended.
func startGenerator(ctx context.Context, brokerAddr string, gc gen.Config) (*generator, error) {
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr), kgo.ClientID("fusebox-demo-gen"), kgo.ProducerLinger(10*time.Millisecond))
	if err != nil {
		return nil, err
	}
	g := &generator{prod: prod, done: make(chan genResult, 1)}
	gc.ProgressEvery = time.Second
	gc.Progress = func(pr gen.Progress) {
		g.mu.Lock()
		g.prog = pr
		g.mu.Unlock()
	}
	go func() {
		sum, err := gen.Run(ctx, gc, prod)
		g.done <- genResult{sum, err}
	}()
	return g, nil
}

// progress is the latest progress reported (zero before the first).
func (g *generator) progress() gen.Progress {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.prog
}

// close closes the producer.
func (g *generator) close() { g.prod.Close() }
