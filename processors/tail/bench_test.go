package tail

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// BenchmarkObserveSpan is the hot path: one span into a key's window, in
// steady state (evaluated and evicted each minute, as the engine does).
func BenchmarkObserveSpan(b *testing.B) {
	tr := baseTraffic(1)
	tr.duration = 30 * time.Minute
	proctest.BenchStream(b, newTail(b, testConfig()), tr.spans(), int64(tr.duration))
}

// BenchmarkEvaluatePerKey is one evaluation of one key with a full 10-min
// window of 6000 spans (GPD fit + profile interval).
func BenchmarkEvaluatePerKey(b *testing.B) {
	tr := baseTraffic(1)
	tr.duration = 10 * time.Minute
	tr.keys = tr.keys[:1]
	p := newTail(b, testConfig())
	proctest.ObserveAll(p, tr.spans())
	snap, _ := p.MarshalBinary()
	newP := func() processors.Processor { return newTail(b, testConfig()) }
	if vs := proctest.BenchEvaluate(b, newP, snap, t0+int64(10*time.Minute)); vs[0].Status != schemas.StatusOK {
		b.Fatal(vs[0].Status)
	}
}
