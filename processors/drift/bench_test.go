package drift

import (
	"testing"
	"time"
)

// BenchmarkObserveSpan is the hot path: one span into a key's window, in
// steady state (evaluated and evicted each minute, as the engine does).
func BenchmarkObserveSpan(b *testing.B) {
	tr := referenceTraffic(1)
	tr.duration = 90 * time.Minute
	spans := tr.spans()
	p := newDrift(b, DefaultConfig())
	var col collect
	every := int64(time.Minute)
	next := (spans[0].EndUnixNano/every + 1) * every
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(spans) == 0 && i > 0 {
			// Wrap around: the same traffic again, later.
			b.StopTimer()
			for j := range spans {
				spans[j].EndUnixNano += int64(tr.duration)
			}
			b.StartTimer()
		}
		s := &spans[i%len(spans)]
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

// benchEvaluate measures one evaluation of one key (canary mode: one canary
// key and its baseline) after 70 minutes of traffic, and reports the
// snapshot bytes per key.
func benchEvaluate(b *testing.B, tr traffic, cfg Config) {
	tr.duration = 70 * time.Minute
	spans := tr.spans()
	p := newDrift(b, cfg)
	var col collect
	stop := t0 + int64(69*time.Minute)
	next := drive(p, spans, 0, 0, stop, &col)
	for i := next; i < len(spans); i++ {
		p.ObserveSpan(spans[i].Key, &spans[i])
	}
	snap, _ := p.MarshalBinary()
	now := stop + int64(time.Minute)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_ = p.UnmarshalBinary(snap) // Evaluate evicts; restore the state
		col.verdicts = col.verdicts[:0]
		b.StartTimer()
		p.Evaluate(now, &col)
	}
	b.StopTimer()
	b.ReportMetric(float64(len(snap))/float64(p.Keys()), "state_bytes/key")
	if len(col.verdicts) != 1 {
		b.Fatalf("%d verdicts", len(col.verdicts))
	}
}

// Reference mode, 5 spans/s: 1500 current vs 18000 reference values
// (ks_asymp).
func BenchmarkEvaluateReferencePerKey(b *testing.B) {
	tr := referenceTraffic(1)
	tr.streams = tr.streams[:1]
	benchEvaluate(b, tr, DefaultConfig())
}

// Canary mode: 600 canary vs 2400 baseline values (ks_exact, Mann–Whitney,
// Hodges–Lehmann).
func BenchmarkEvaluateCanaryPerKey(b *testing.B) {
	tr := canaryTraffic(1)
	tr.streams = tr.streams[:2]
	benchEvaluate(b, tr, canaryConfig())
}
