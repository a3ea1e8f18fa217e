package replay

import (
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/router"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// StreamTopic is the one source topic Stream announces: every step's spans
// and corrections travel in one message of its one partition, so that no
// silent second source holds the watermark back on sparse traffic.
const StreamTopic = "otlp_spans"

// Stream generates d of sc's traffic from start and applies it, step by
// step, to one engine.Worker (keyed partition 0) through the router's
// Splitter (see StreamBatches). step defaults to 1s.
func Stream(cfg engine.WorkerConfig, sc traffic.Scenario, start time.Time, d, step time.Duration, out func(schemas.Output)) (engine.WorkerStats, error) {
	if step <= 0 {
		step = time.Second
	}
	g, err := traffic.New(sc, start)
	if err != nil {
		return engine.WorkerStats{}, err
	}
	return StreamBatches(cfg, func() ([]schemas.Span, []schemas.Correction, bool) {
		if g.Offset() >= d {
			return nil, nil, false
		}
		b := g.Next(step)
		return b.Spans, b.Corrections, true
	}, out)
}

// StreamBatches applies the batches next returns (until its ok is false),
// each as one message of the one source partition, to one engine.Worker
// (keyed partition 0) through the router's Splitter, exactly as Route and
// Drive would, handing every output to out as it is produced. Memory stays
// bounded by one batch and the worker's own windows, so a study can run
// days of event time. The source is marked idle at the end, so the last
// windows close.
func StreamBatches(cfg engine.WorkerConfig, next func() ([]schemas.Span, []schemas.Correction, bool), out func(schemas.Output)) (engine.WorkerStats, error) {
	w, err := engine.NewWorker(cfg, 0)
	if err != nil {
		return engine.WorkerStats{}, err
	}
	sp := router.NewSplitter(StreamTopic, 0, 1, router.SplitterConfig{ByTenant: true})
	const announce = StreamTopic + ":1"
	var offset, keyed int64
	apply := func(outs []router.Out) {
		for _, o := range outs {
			rec := engine.KeyedRecord{Offset: keyed, Source: o.Source, SourceMaxEventTime: o.SourceMax,
				SourceTopics: announce, Idle: o.Idle, Spans: o.Spans, Corrections: o.Corrections}
			keyed++
			w.Apply(&rec)
			if o := w.TakeOutput(); !o.Empty() {
				out(o)
			}
		}
	}
	for {
		spans, corrections, ok := next()
		if !ok {
			break
		}
		if len(spans)+len(corrections) == 0 {
			continue
		}
		apply(sp.Split(offset, spans, corrections))
		offset++
	}
	apply(sp.MarkIdle())
	return w.Stats(), nil
}
