package scaling

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
)

// BenchmarkObserveSpan: steady state, spans of two tenants landing in
// existing slots (their categories known, their moments growing).
func BenchmarkObserveSpan(b *testing.B) {
	proctest.BenchObserveSpans(b, mustNew(b, testConfig()), generate(1, t0, t0+10*minute, script{}))
}

// BenchmarkEvaluate: one evaluation over full 5-minute windows of 200
// scope keys (about 1000 spans each, in five slots' moments); reports ns
// per key and snapshot bytes per key.
func BenchmarkEvaluate(b *testing.B) {
	spans := generate(2, t0, t0+5*minute, script{})
	p := mustNew(b, testConfig())
	for k := range 100 { // 100 copies of the 2 generated tenants
		for i := range spans {
			s := spans[i]
			s.Key.Tenant = s.Key.Tenant + string(rune('A'+k%26)) + string(rune('a'+k/26))
			p.ObserveSpan(s.Key, &s)
		}
	}
	snap, _ := p.MarshalBinary()
	proctest.BenchEvaluate(b, func() processors.Processor { return mustNew(b, testConfig()) }, snap, t0+5*minute)
}
