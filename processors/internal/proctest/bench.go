package proctest

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// BenchObserveSpans measures ObserveSpan in steady state between
// evaluations: spans are fed once before the timer starts (so their keys
// and slots exist), then again and again.
func BenchObserveSpans(b *testing.B, p processors.Processor, spans []schemas.Span) {
	ObserveAll(p, spans)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s := &spans[i%len(spans)]
		p.ObserveSpan(s.Key, s)
	}
}

// BenchStream measures ObserveSpan as the engine runs it: spans (sorted by
// end time, covering period ns of event time) are fed in order, pass after
// pass, each pass shifted period later, and every boundary is evaluated as
// it passes, outside the timer (so eviction and slot recycling happen as in
// production).
func BenchStream(b *testing.B, p processors.Processor, spans []schemas.Span, period int64) {
	var out Collector
	every := int64(p.Interval())
	next := (spans[0].EndUnixNano/every + 1) * every
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%len(spans) == 0 && i > 0 {
			b.StopTimer()
			for j := range spans {
				spans[j].EndUnixNano += period
			}
			b.StartTimer()
		}
		s := &spans[i%len(spans)]
		if s.EndUnixNano >= next {
			b.StopTimer()
			out.Reset()
			p.Evaluate(next, &out)
			next += every
			b.StartTimer()
		}
		p.ObserveSpan(s.Key, s)
	}
}

// BenchEvaluate measures one Evaluate(now) of the state in snap, restored
// into a fresh newP() before each run (outside the timer), and reports ns
// per key and the snapshot's bytes per key. It returns the verdicts of the
// last run.
func BenchEvaluate(b *testing.B, newP func() processors.Processor, snap []byte, now int64) []schemas.Verdict {
	var out Collector
	keys := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		p := newP()
		if err := p.UnmarshalBinary(snap); err != nil {
			b.Fatal(err)
		}
		keys = p.Keys()
		out.Reset()
		b.StartTimer()
		p.Evaluate(now, &out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
	b.ReportMetric(float64(len(snap))/float64(keys), "state_bytes/key")
	return out.Verdicts
}
