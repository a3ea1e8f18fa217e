package decay

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
)

// BenchmarkObserveSpan: steady state, scores landing in existing slots
// already at their sample cap.
func BenchmarkObserveSpan(b *testing.B) {
	proctest.BenchObserveSpans(b, mustNew(b, DefaultConfig()), generate(1, t0, t0+5*minute, script{}))
}

// BenchmarkEvaluate: one evaluation of 30 keys with full 1-hour windows
// (2400 kept scores each: OLS on 2400, Theil–Sen on 500, the log fit);
// reports ns per key and snapshot bytes per key.
func BenchmarkEvaluate(b *testing.B) {
	spans := generate(2, t0, t0+hour, script{})
	p := mustNew(b, DefaultConfig())
	for c := range 10 { // 10 copies of the 3 generated keys
		for i := range spans {
			s := spans[i]
			s.Key.Tenant += string(rune('A' + c))
			p.ObserveSpan(s.Key, &s)
		}
	}
	snap, _ := p.MarshalBinary()
	proctest.BenchEvaluate(b, func() processors.Processor { return mustNew(b, DefaultConfig()) }, snap, t0+hour)
}
