package soak

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// spansPerMessage is the spans of one OTLP message, as a Collector's
// export batch.
const spansPerMessage = 100

// feeder produces the soak's traffic: the demo scenario's keys generated
// at the run's peak rate and thinned, call by call, to the rate of the
// moment (Options.rate), with event time = wall time.
type feeder struct {
	o           *Options
	cl          *kgo.Client
	spans, corr string
	produced    atomic.Int64 // LLM calls produced (handed to the client)
	failed      atomic.Pointer[error]
}

func (f *feeder) run(ctx context.Context) error {
	sc := traffic.Demo()
	sc.Name = "fusebox-soak"
	sc.Seed = f.o.Seed
	sc.Rate = f.o.peak()
	sc.Duration = 0
	sc.Incidents = nil
	w0 := time.Now()
	g, err := traffic.New(sc, w0)
	if err != nil {
		return fmt.Errorf("soak: the traffic: %w", err)
	}
	// Thinning is by trace, so a kept correction's call is kept too (and
	// a trace's spans stay together): a trace is kept when its id, read
	// as a fraction of 2^64, is below the share kept.
	kept := func(id schemas.TraceID, keep float64) bool {
		return float64(binary.BigEndian.Uint64(id[8:]))/(1<<64) < keep
	}
	names := schemas.DefaultAttributeNames()
	done := func(r *kgo.Record, err error) {
		if err != nil {
			f.failed.CompareAndSwap(nil, &err)
		}
	}
	for ctx.Err() == nil && g.Offset() < f.o.Duration {
		if p := f.failed.Load(); p != nil {
			return fmt.Errorf("soak: produce: %w", *p)
		}
		keep := f.o.rate(g.Offset()) / sc.Rate
		b := g.Next(time.Second)
		var spans []schemas.Span
		calls := int64(0)
		for _, s := range b.Spans {
			if kept(s.TraceID, keep) {
				spans = append(spans, s)
				calls++
			}
		}
		for _, s := range b.Other {
			if kept(s.TraceID, keep) {
				spans = append(spans, s)
			}
		}
		for len(spans) > 0 {
			n := min(spansPerMessage, len(spans))
			f.cl.Produce(ctx, &kgo.Record{Topic: f.spans, Value: schemas.EncodeOTLPProto(nil, spans[:n], names), Timestamp: g.Now()}, done)
			spans = spans[n:]
		}
		for _, c := range b.Corrections {
			if !kept(c.TraceID, keep) {
				continue
			}
			v, err := schemas.EncodeCorrection(c)
			if err != nil {
				return fmt.Errorf("soak: encode a correction: %w", err)
			}
			f.cl.Produce(ctx, &kgo.Record{Topic: f.corr, Value: v, Timestamp: time.Unix(0, c.TimeUnixNano)}, done)
		}
		f.produced.Add(calls)
		// Event time = wall time: wait for the wall clock to reach it.
		if wait := time.Until(w0.Add(g.Offset())); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := f.cl.Flush(fctx); err != nil {
		return fmt.Errorf("soak: flush the traffic: %w", err)
	}
	if p := f.failed.Load(); p != nil {
		return fmt.Errorf("soak: produce: %w", *p)
	}
	return nil
}
