package drift

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
)

// BenchmarkObserveSpan is the hot path: one span into a key's window, in
// steady state (evaluated and evicted each minute, as the engine does).
func BenchmarkObserveSpan(b *testing.B) {
	tr := referenceTraffic(1)
	tr.duration = 90 * time.Minute
	proctest.BenchStream(b, newDrift(b, DefaultConfig()), tr.spans(), int64(tr.duration))
}

// benchEvaluate measures one evaluation of one key (canary mode: one canary
// key and its baseline) after 70 minutes of traffic, and reports the
// snapshot bytes per key.
func benchEvaluate(b *testing.B, tr traffic, cfg Config) {
	tr.duration = 70 * time.Minute
	spans := tr.spans()
	p := newDrift(b, cfg)
	stop := t0 + int64(69*time.Minute)
	proctest.ObserveAll(p, spans[proctest.Replay(p, spans, 0, 0, stop, &proctest.Collector{}):])
	snap, _ := p.MarshalBinary()
	newP := func() processors.Processor { return newDrift(b, cfg) }
	if vs := proctest.BenchEvaluate(b, newP, snap, stop+int64(time.Minute)); len(vs) != 1 {
		b.Fatalf("%d verdicts", len(vs))
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
