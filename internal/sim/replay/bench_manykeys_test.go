package replay

// The many-keys case of issue 25: a realistic SLO file of 7 SLOs on 150
// keys of a few calls a second each, evaluated every minute over 10-20
// minute windows, where the evaluations, not the spans, set the cost.
//
//	go test ./internal/sim/replay -run '^$' -bench ManyKeys -benchtime 2x -cpu 1

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/processors"
)

// manyKeysYAML is production.yaml's SLOs (the canary drift, tail P99.9,
// corrections, scaling, burn rate and decay) plus a reference-mode drift
// SLO (ks, cusum and slice, at their defaults), every one evaluated each
// minute over 10-20 minute windows (decay over 20 minutes instead of
// production's hour every 5 minutes; drift's reference 20 minutes).
const manyKeysYAML = `
version: many-keys-1
keys:
  dimensions: [tenant, service, model, variant]
time:
  allowed_lateness: 10s
slos:
  - name: latency-p999
    tail: {metric: duration_ms, p: 0.999, budget: 6000, window: 10m, every: 1m}
  - name: canary-confidence
    drift: {metric: confidence, mode: canary, window: 10m, every: 1m, alpha: 0.001, consecutive: 3, min_effect: 0.1}
  - name: confidence-drift
    drift: {metric: confidence, mode: reference, window: 10m, every: 1m, reference_window: 20m}
  - name: alignment-trend
    decay: {metric: alignment, window: 20m, every: 1m, limit: -0.12}
  - name: user-corrections
    corrections: {max_rate: 0.05, window: 10m, every: 1m, min_responses: 300}
  - name: capacity
    scaling: {scope: [tenant, service], mix: [route, model], stddev_budget_ms: 1000, entropy_high: 0.7, entropy_low: 0.35, window: 10m, every: 1m}
  - name: availability
    burnrate: {target: 0.999}
breaker:
  rules:
    - {processor: tail, action: trip}
    - {processor: burnrate, metric: burn_rate_page, action: trip}
    - {processor: scaling, action: scale_out}
    - {processor: drift, action: rollback}
    - {processor: corrections, metric: canary_correction_rate, action: rollback}
    - {processor: decay, action: degrade, fallback: gpt-4o-mini}
`

// manyKeysDuration is the event time of the traffic: the drift
// reference's 20 minutes behind its 10-minute window are full from minute
// 30 on, the decay's 20 minutes from minute 20.
const manyKeysDuration = 40 * time.Minute

// manyKeysScenario is the demo traffic (no incidents) on 5 tenants x 3
// services x 5 models x {baseline, canary} = 150 keys at 225 calls/s in
// all: 3 calls/s per (tenant, service, model), of which 20% on the canary,
// so a baseline key gets 2.4 calls/s (1,440 per 10-minute window: a GPD
// fit on ~72 exceedances) and a canary key 0.6 (360: the empirical
// quantile), plus the demo's 20% of spans without a model.
func manyKeysScenario() traffic.Scenario {
	sc := Quiet(traffic.Demo())
	sc.Tenants = names("t", 5)
	sc.Services = []string{"chat", "search", "agent"}
	sc.Models = []string{"gpt-4o-mini", "claude-3-5-haiku", "llama-3-70b", "mistral-large", "gemini-flash"}
	sc.Rate = 225
	return sc
}

var manyKeysCache struct {
	once sync.Once
	bt   *benchTraffic
	err  error
}

func manyKeysTraffic(b *testing.B) *benchTraffic {
	b.Helper()
	c := &manyKeysCache
	c.once.Do(func() {
		src, err := Generate(manyKeysScenario(), Start, manyKeysDuration, GenConfig{SpansPerMessage: 100})
		if err != nil {
			c.err = err
			return
		}
		recs, err := Records(src)
		if err != nil {
			c.err = err
			return
		}
		c.bt = &benchTraffic{src: src, keyed: Route(src, RouteConfig{}), recs: recs, spans: src.Spans()}
	})
	if c.err != nil {
		b.Fatal(c.err)
	}
	return c.bt
}

// timedProcessor is a processor whose Evaluate calls add the process's
// CPU time they take to *ns (with -cpu 1 the garbage collector's work
// during an evaluation is counted with it; wall time would count the other
// processes of a shared machine).
type timedProcessor struct {
	processors.Processor
	ns *atomic.Int64
}

func (t timedProcessor) Evaluate(now int64, emit processors.Emitter) {
	t0 := cpuTime()
	t.Processor.Evaluate(now, emit)
	t.ns.Add(int64(cpuTime() - t0))
}

// manyKeysConfig is manyKeysYAML's worker configuration with every
// processor's Evaluate timed into ns.
func manyKeysConfig(b *testing.B, ns *atomic.Int64) engine.WorkerConfig {
	b.Helper()
	cfg, _, err := ParseWorkerConfig("many-keys.yaml", []byte(manyKeysYAML))
	if err != nil {
		b.Fatal(err)
	}
	if len(cfg.SLOs) < 7 {
		b.Fatalf("%d SLOs, want at least 7", len(cfg.SLOs))
	}
	slos := make([]engine.SLOSpec, len(cfg.SLOs))
	for i, s := range cfg.SLOs {
		newp := s.New
		s.New = func() (processors.Processor, error) {
			p, err := newp()
			if err != nil {
				return nil, err
			}
			return timedProcessor{Processor: p, ns: ns}, nil
		}
		slos[i] = s
	}
	cfg.SLOs = slos
	return cfg
}

// BenchmarkManyKeys: the many-keys case (manyKeysYAML on
// manyKeysScenario's 150 keys, 40 minutes, ~650k spans) through 4 keyed
// workers with the rollups and the breaker, from the published bytes
// (DecodeIncluded, as BenchmarkDecodeIncluded) and from decoded keyed
// records (DecodeExcluded, as BenchmarkWorkerDecodeExcluded). Besides
// BenchmarkWorkerDecodeExcluded's metrics it reports eval-ns/span, the
// time inside the processors' Evaluate per span, and eval-%, its share
// of the process's CPU time (the breaker's handling of the verdicts and
// the engine's evaluation bookkeeping are outside it).
func BenchmarkManyKeys(b *testing.B) {
	for _, decode := range []bool{true, false} {
		name := "DecodeExcluded"
		if decode {
			name = "DecodeIncluded"
		}
		b.Run(name, func(b *testing.B) {
			bt := manyKeysTraffic(b)
			var ns atomic.Int64
			cfg := manyKeysConfig(b, &ns)
			b.ResetTimer()
			ns.Store(0)
			cpu0 := cpuTime()
			for range b.N {
				if decode {
					decodeAndApply(b, cfg, bt)
				} else {
					applyAll(b, cfg, bt.keyed)
				}
			}
			cpu := cpuTime() - cpu0
			reportSpans(b, bt.spans, cpu0)
			b.ReportMetric(float64(ns.Load())/(float64(bt.spans)*float64(b.N)), "eval-ns/span")
			b.ReportMetric(100*float64(ns.Load())/float64(cpu.Nanoseconds()), "eval-%")
		})
	}
}
