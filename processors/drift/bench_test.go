package drift

import (
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
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
	if vs := proctest.BenchEvaluate(b, newP, snap, stop+int64(time.Minute)); len(vs) != len(cfg.Metrics()) {
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

// BenchmarkPerCall is the whole CPU cost per call of one key of the
// issue's score stream at 200 calls/min over 3 h: ObserveSpan, every
// evaluation (KS every minute, cusum and slice every 15 s) and eviction,
// divided by the calls (the stream's generation included: about 60 ns).
// Sub-benchmarks: the defaults, and ks alone at the old defaults (alpha
// 1e-5, 3 in a row, min_effect 0.1, Every-wide slots).
func BenchmarkPerCall(b *testing.B) {
	old := DefaultConfig()
	old.Detectors, old.Alpha, old.Consecutive, old.MinEffect, old.MaxWindow = []string{DetectorKS}, 1e-5, 3, ptr(0.1), old.Window
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"defaults", DefaultConfig()}, {"ks_only_old_defaults", old}} {
		b.Run(c.name, func(b *testing.B) {
			calls := 0
			cpu0 := cpuTime()
			for b.Loop() {
				p := newDrift(b, c.cfg)
				scoreStream{seed: 7, perMin: 200}.run(p, 3*time.Hour, func(*schemas.Verdict) bool { return false })
				calls += 3 * 60 * 200
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(calls), "ns/call")
			// CPU time, not wall: the machine may be shared.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(calls), "cpu-ns/call")
		})
	}
}

// cpuTime is the process's user and system CPU time, ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
