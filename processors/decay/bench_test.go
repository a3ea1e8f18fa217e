package decay

import (
	"testing"
)

// BenchmarkObserveSpan: steady state, scores landing in existing slots
// already at their sample cap.
func BenchmarkObserveSpan(b *testing.B) {
	spans := generate(1, t0, t0+5*minute, script{})
	p := mustNew(b, DefaultConfig())
	for i := range spans {
		p.ObserveSpan(spans[i].Key, &spans[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := &spans[i%len(spans)]
		p.ObserveSpan(s.Key, s)
	}
}

// BenchmarkEvaluate: one evaluation of 30 keys with full 1-hour windows
// (2400 kept scores each: OLS on 2400, Theil–Sen on 500, the log fit);
// reports ns per key and snapshot bytes per key.
func BenchmarkEvaluate(b *testing.B) {
	spans := generate(2, t0, t0+hour, script{})
	p := mustNew(b, DefaultConfig())
	const copies = 10
	for c := range copies {
		for i := range spans {
			s := spans[i]
			s.Key.Tenant += string(rune('A' + c))
			p.ObserveSpan(s.Key, &s)
		}
	}
	keys := p.Keys()
	snap, _ := p.MarshalBinary()
	b.ReportAllocs()
	b.ResetTimer()
	var out sink
	for b.Loop() {
		b.StopTimer()
		q := mustNew(b, DefaultConfig())
		_ = q.UnmarshalBinary(snap)
		out.verdicts = out.verdicts[:0]
		b.StartTimer()
		q.Evaluate(t0+hour, &out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
	b.ReportMetric(float64(len(snap))/float64(keys), "state_bytes/key")
}
