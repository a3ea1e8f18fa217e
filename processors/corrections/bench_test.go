package corrections

import (
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// BenchmarkObserveSpan: steady state with the index at its cap (each span
// indexed evicts the oldest), spans with trace and session ids.
func BenchmarkObserveSpan(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MaxIndexedSpans = 100_000
	p := mustNew(b, cfg)
	r := rand.New(rand.NewPCG(1, 1))
	spans := make([]schemas.Span, 1<<16)
	sessions := make([]string, 5000)
	for i := range sessions {
		sessions[i] = "session-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	for i := range spans {
		k := streams[i%len(streams)].key
		spans[i] = proctest.NewSpan(r, k, "chat", t0, 100)
		spans[i].SessionID = sessions[r.IntN(len(sessions))]
	}
	end := t0
	for i := range 200_000 { // fill the index past its cap
		s := &spans[i%len(spans)]
		end += 1000
		s.EndUnixNano = end
		p.ObserveSpan(s.Key, s)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := &spans[i%len(spans)]
		end += 1000 // 1 µs apart: all in one slot
		s.EndUnixNano = end
		p.ObserveSpan(s.Key, s)
	}
}

// BenchmarkEvaluate: one evaluation (join of the last minute's corrections
// and the verdicts) with 10 copies of the generated tenants (40 span keys
// plus the unjoined keys); reports ns per key and snapshot bytes per key.
func BenchmarkEvaluate(b *testing.B) {
	const copies = 10
	var evs []proctest.Event
	for c := range copies {
		for _, e := range generate(uint64(c+1), t0, t0+10*minute, script{}) {
			if e.Span != nil {
				s := *e.Span
				s.Key.Tenant += string(rune('A' + c))
				e.Span = &s
			} else {
				x := *e.Correction
				x.Tenant += string(rune('A' + c))
				e.Correction = &x
			}
			evs = append(evs, e)
		}
	}
	p := mustNew(b, DefaultConfig())
	proctest.DriveEvents(b, p, evs, t0, t0+9*minute)
	snap, _ := p.MarshalBinary()
	proctest.BenchEvaluate(b, func() processors.Processor { return mustNew(b, DefaultConfig()) }, snap, t0+10*minute)
	n, _, _ := p.IndexStats()
	b.ReportMetric(float64(n), "indexed_spans")
}
