package tail

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// BenchmarkObserveSpan is the hot path: one span into a key's window, in
// steady state (evaluated and evicted each minute, as the engine does).
func BenchmarkObserveSpan(b *testing.B) {
	tr := baseTraffic(1)
	tr.duration = 30 * time.Minute
	spans := tr.spans()
	p := newTail(b, testConfig())
	var col collect
	every := int64(time.Minute)
	next := (spans[0].EndUnixNano/every + 1) * every
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := &spans[i%len(spans)]
		if i%len(spans) == 0 && i > 0 {
			// Wrap around: the same traffic again, 30 minutes later.
			b.StopTimer()
			for j := range spans {
				spans[j].EndUnixNano += int64(tr.duration)
			}
			b.StartTimer()
		}
		if s.EndUnixNano >= next {
			b.StopTimer()
			col.verdicts = col.verdicts[:0]
			p.Evaluate(next, &col)
			next += every
			b.StartTimer()
		}
		p.ObserveSpan(s.Key, s)
	}
}

// BenchmarkEvaluatePerKey is one evaluation of one key with a full 10-min
// window of 6000 spans (GPD fit + profile interval).
func BenchmarkEvaluatePerKey(b *testing.B) {
	tr := baseTraffic(1)
	tr.duration = 10 * time.Minute
	tr.keys = tr.keys[:1]
	spans := tr.spans()
	p := newTail(b, testConfig())
	for i := range spans {
		p.ObserveSpan(spans[i].Key, &spans[i])
	}
	snap, _ := p.MarshalBinary()
	now := t0 + int64(10*time.Minute)
	var col collect
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_ = p.UnmarshalBinary(snap) // Evaluate evicts; restore the window
		col.verdicts = col.verdicts[:0]
		b.StartTimer()
		p.Evaluate(now, &col)
	}
	b.ReportMetric(float64(len(snap)), "state_bytes/key")
	if col.verdicts[0].Status != schemas.StatusOK {
		b.Fatal(col.verdicts[0].Status)
	}
}
