package scaling

import (
	"testing"
)

// BenchmarkObserveSpan: steady state, spans of two tenants landing in
// existing slots whose latency samples are already at capacity.
func BenchmarkObserveSpan(b *testing.B) {
	spans := generate(1, t0, t0+10*minute, script{})
	p := mustNew(b, testConfig())
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

// BenchmarkEvaluate: one evaluation over full 5-minute windows of 200
// scope keys (about 1000 spans each, 2000-sample latency cap); reports
// ns per key and snapshot bytes per key.
func BenchmarkEvaluate(b *testing.B) {
	const keys = 200
	spans := generate(2, t0, t0+5*minute, script{})
	p := mustNew(b, testConfig())
	for k := range keys / 2 {
		for i := range spans {
			s := spans[i]
			s.Key.Tenant = s.Key.Tenant + string(rune('A'+k%26)) + string(rune('a'+k/26))
			p.ObserveSpan(s.Key, &s)
		}
	}
	snap, _ := p.MarshalBinary()
	b.ReportAllocs()
	b.ResetTimer()
	var out sink
	for b.Loop() {
		out.verdicts = out.verdicts[:0]
		q := mustNew(b, testConfig())
		b.StopTimer()
		_ = q.UnmarshalBinary(snap)
		b.StartTimer()
		q.Evaluate(t0+5*minute, &out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/key")
	b.ReportMetric(float64(len(snap))/keys, "state_bytes/key")
}
