package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// HealthReporter is a sink that can say it is failing (clickhousesink):
// Health is nil while its writes succeed, else the last failure.
type HealthReporter interface {
	Health() error
}

// sinkWatchEvery is how often the sinks' health is polled.
const sinkWatchEvery = 250 * time.Millisecond

// sinkWatch makes a failing sink loud: it logs (WARN) when a sink's writes
// begin to fail and (INFO) when they succeed again, and Failing says which
// are failing now, for /readyz.
type sinkWatch struct {
	log   *slog.Logger
	sinks map[string]HealthReporter

	mu      sync.Mutex
	failing map[string]sinkFailure
}

type sinkFailure struct {
	since time.Time
	err   error
}

func newSinkWatch(log *slog.Logger, sinks map[string]HealthReporter) *sinkWatch {
	return &sinkWatch{log: log, sinks: sinks, failing: map[string]sinkFailure{}}
}

// run polls until ctx ends.
func (w *sinkWatch) run(ctx context.Context) {
	t := time.NewTicker(sinkWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			w.poll(now)
		}
	}
}

func (w *sinkWatch) poll(now time.Time) {
	for name, s := range w.sinks {
		err := s.Health()
		w.mu.Lock()
		f, was := w.failing[name]
		switch {
		case err != nil && !was:
			w.failing[name] = sinkFailure{since: now, err: err}
			w.log.Warn("sink failing: writes are retried and input offsets wait for them", "sink", name, "err", err)
		case err != nil:
			w.failing[name] = sinkFailure{since: f.since, err: err}
		case was:
			delete(w.failing, name)
			// WARN, as the failure's start: an operator filtering on WARN
			// sees when the failure ended, not only that it began.
			w.log.Warn("sink recovered", "sink", name, "failed_for", now.Sub(f.since).Round(time.Millisecond).String())
		}
		w.mu.Unlock()
	}
}

// Failing returns a reason per failing sink, sorted.
func (w *sinkWatch) Failing() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, f := range w.failing {
		out = append(out, fmt.Sprintf("sink %s failing for %v: %v", name, time.Since(f.since).Round(time.Second), f.err))
	}
	slices.Sort(out)
	return out
}

// joinReasons joins the reasons for /readyz.
func joinReasons(r []string) string { return strings.Join(r, "; ") }
