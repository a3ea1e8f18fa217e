package gen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
)

// Producer is what Run publishes through; *kgo.Client implements it. The
// client should be idempotent (franz-go's default) so that a retried batch
// is written once.
type Producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
	Flush(ctx context.Context) error
}

// Counts are what the broker acknowledged.
type Counts struct {
	// Spans are LLM calls; OtherSpans the spans without a model that share
	// their traces.
	Spans, OtherSpans int64
	Corrections       int64
	// SpanMessages and CorrectionMessages are Kafka records.
	SpanMessages, CorrectionMessages int64
	// Bytes are the record values.
	Bytes int64
}

// Progress is reported every Config.ProgressEvery of wall time.
type Progress struct {
	Counts
	// Wall is the wall time since Run started.
	Wall time.Duration
	// EventTime is the event time generated so far.
	EventTime time.Time
	// SpansPerSecond is the LLM spans acknowledged per second of wall
	// time since the previous report.
	SpansPerSecond float64
}

// Summary is what Run did.
type Summary struct {
	Counts
	// EventStart and EventEnd bound the event time generated.
	EventStart, EventEnd time.Time
	// Wall is the wall time Run took, flushing included.
	Wall time.Duration
	// Stopped is true when the context ended the run before the
	// scenario's end.
	Stopped bool
}

// ProduceError is returned when the broker refused a record (after the
// client's own retries): the run stops at once.
type ProduceError struct {
	Topic string
	Err   error
}

func (e *ProduceError) Error() string { return fmt.Sprintf("gen: produce to %s: %v", e.Topic, e.Err) }
func (e *ProduceError) Unwrap() error { return e.Err }

// Run publishes cfg's traffic through p until the scenario's event-time
// duration has been generated, the context ends, or a record fails. Either
// way it then waits up to cfg.FlushTimeout for the records in flight, and
// returns what the broker acknowledged. A context that ends is a clean
// stop (Summary.Stopped, nil error); a record the broker refused stops the
// run with a *ProduceError; records not acknowledged within FlushTimeout
// make an error saying how many.
//
// Pacing: after each step, Run sleeps until the wall clock has caught up
// with event time / Speedup since the start; when publishing is slower than
// that, it runs behind rather than dropping anything.
func Run(ctx context.Context, cfg Config, p Producer) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	cfg = cfg.withDefaults()
	g, err := traffic.New(cfg.Scenario, cfg.Start)
	if err != nil {
		return Summary{}, fmt.Errorf("gen: %w", err)
	}
	// Records are produced under a context of their own: the caller's
	// ending stops generation, not delivery of what is in flight, which
	// gets FlushTimeout more.
	prodCtx, prodCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer prodCancel()
	stopDelivery := context.AfterFunc(ctx, func() { time.AfterFunc(cfg.FlushTimeout, prodCancel) })
	defer stopDelivery()

	var (
		acked   ackCounts
		errOnce sync.Once
		failed  atomic.Pointer[ProduceError]
	)
	w0 := time.Now()
	sum := Summary{EventStart: g.Now()}
	rep := reporter{cfg: &cfg, acked: &acked, w0: w0, next: w0.Add(cfg.ProgressEvery), last: w0}
	for !g.Done() {
		if ctx.Err() != nil {
			sum.Stopped = true
			break
		}
		if failed.Load() != nil {
			break
		}
		step := cfg.Step
		if d := cfg.Scenario.Duration; d > 0 {
			step = min(step, d-g.Offset())
		}
		msgs, err := encodeStep(&cfg, g.Next(step))
		if err != nil {
			return sum, err
		}
		for _, m := range msgs {
			m := m
			p.Produce(prodCtx, m.rec, func(r *kgo.Record, err error) {
				if err != nil {
					errOnce.Do(func() { failed.Store(&ProduceError{Topic: r.Topic, Err: err}) })
					return
				}
				acked.add(m, len(r.Value))
			})
		}
		pace(ctx, &cfg, w0, g.Offset(), &rep, g.Now)
	}
	sum.EventEnd = g.Now()

	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.FlushTimeout)
	ferr := p.Flush(fctx)
	fcancel()
	sum.Counts = acked.load()
	sum.Wall = time.Since(w0)
	if pe := failed.Load(); pe != nil {
		if errors.Is(pe.Err, context.Canceled) && ctx.Err() != nil {
			// Delivery was cut off FlushTimeout after the stop.
			return sum, fmt.Errorf("gen: stopped with records still unacknowledged after %v: %w", cfg.FlushTimeout, pe)
		}
		return sum, pe
	}
	if ferr != nil {
		return sum, fmt.Errorf("gen: records still unacknowledged after %v: %w", cfg.FlushTimeout, ferr)
	}
	return sum, nil
}

// pace sleeps until the wall clock reaches w0 + offset/Speedup, or ctx
// ends, reporting progress on the way.
func pace(ctx context.Context, cfg *Config, w0 time.Time, offset time.Duration, rep *reporter, eventNow func() time.Time) {
	var target time.Time
	if cfg.Speedup > 0 {
		target = w0.Add(time.Duration(float64(offset) / cfg.Speedup))
	}
	for {
		now := time.Now()
		rep.maybe(now, eventNow())
		wait := target.Sub(now)
		if wait <= 0 {
			return
		}
		if rep.enabled() {
			wait = min(wait, max(rep.next.Sub(now), time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// reporter calls Config.Progress every ProgressEvery.
type reporter struct {
	cfg       *Config
	acked     *ackCounts
	w0, next  time.Time
	last      time.Time
	lastSpans int64
}

func (r *reporter) enabled() bool { return r.cfg.Progress != nil && r.cfg.ProgressEvery > 0 }

func (r *reporter) maybe(now, eventNow time.Time) {
	if !r.enabled() || now.Before(r.next) {
		return
	}
	c := r.acked.load()
	spans := c.Spans
	rate := 0.0
	if dt := now.Sub(r.last).Seconds(); dt > 0 {
		rate = float64(spans-r.lastSpans) / dt
	}
	r.cfg.Progress(Progress{Counts: c, Wall: now.Sub(r.w0), EventTime: eventNow, SpansPerSecond: rate})
	r.last, r.lastSpans = now, spans
	r.next = now.Add(r.cfg.ProgressEvery)
}

// ackCounts are the Counts, updated from promises.
type ackCounts struct {
	spans, other, corrections, spanMsgs, corrMsgs, bytes atomic.Int64
}

func (a *ackCounts) add(m message, size int) {
	a.bytes.Add(int64(size))
	if m.corrections > 0 {
		a.corrections.Add(int64(m.corrections))
		a.corrMsgs.Add(1)
		return
	}
	a.spans.Add(int64(m.spans))
	a.other.Add(int64(m.other))
	a.spanMsgs.Add(1)
}

func (a *ackCounts) load() Counts {
	return Counts{
		Spans: a.spans.Load(), OtherSpans: a.other.Load(), Corrections: a.corrections.Load(),
		SpanMessages: a.spanMsgs.Load(), CorrectionMessages: a.corrMsgs.Load(), Bytes: a.bytes.Load(),
	}
}
