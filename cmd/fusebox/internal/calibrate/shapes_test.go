package calibrate

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// A shape is traffic that `fusebox gen` (internal/sim/traffic) does not make:
// its keys with their rates, a latency law per call, and a rate
// modulation over time.
type shape struct {
	name string
	keys []shapeKey
	// latency draws one call's duration (ms) and whether it failed.
	latency func(r *rand.Rand, k *shapeKey) (float64, bool)
	// rate multiplies every key's rate at offset t from the start.
	rate func(t time.Duration) float64
}

type shapeKey struct {
	key    schemas.Key
	rate   float64 // calls/s
	median float64 // ms
}

// incident changes the calls of the keys it matches in [start, end).
type incident struct {
	name       string
	processor  string // the processor that must command it
	start, end time.Duration
	match      func(k schemas.Key) bool
	apply      func(r *rand.Rand, s *schemas.Span)
}

var shapeStart = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// generate makes d of the shape's traffic with seed, the incidents
// applied, and returns it as calibrate reads it: encoded as OTLP/JSON
// lines and decoded back.
func (sh *shape) generate(t testing.TB, seed uint64, d time.Duration, incs []incident) *Input {
	t.Helper()
	file := sh.file(seed, d, incs)
	var in Input
	if err := in.ReadOTLPJSONLines(bytes.NewReader(file), sh.name, schemas.DefaultAttributeNames(), schemas.Limits{}); err != nil {
		t.Fatal(err)
	}
	if in.Skipped != 0 {
		t.Fatalf("%s: %d records skipped: %v", sh.name, in.Skipped, in.Problems)
	}
	in.Sort()
	return &in
}

// file is the shape's traffic as OTLP/JSON lines of up to 100 spans.
func (sh *shape) file(seed uint64, d time.Duration, incs []incident) []byte {
	var spans []schemas.Span
	var file bytes.Buffer
	names := schemas.DefaultAttributeNames()
	flush := func() {
		if len(spans) > 0 {
			file.Write(schemas.EncodeOTLPJSON(nil, spans, names))
			file.WriteByte('\n')
			spans = spans[:0]
		}
	}
	sh.each(seed, d, incs, func(s *schemas.Span) {
		spans = append(spans, *s)
		if len(spans) == 100 {
			flush()
		}
	}, flush)
	return file.Bytes()
}

// input is the shape's traffic as spans, sorted, without the OTLP/JSON
// round trip generate makes (for the long studies: the engine sees the
// same spans, decoding aside).
func (sh *shape) input(seed uint64, d time.Duration, incs []incident) *Input {
	var in Input
	sh.each(seed, d, incs, func(s *schemas.Span) { in.Spans = append(in.Spans, *s) }, func() {})
	in.Sort()
	return &in
}

// each calls span for every call of d of the shape's traffic with seed,
// the incidents applied, and second after each second of it.
func (sh *shape) each(seed uint64, d time.Duration, incs []incident, span func(*schemas.Span), second func()) {
	r := rand.New(rand.NewPCG(seed, 0x18))
	for sec := time.Duration(0); sec < d; sec += time.Second {
		mult := 1.0
		if sh.rate != nil {
			mult = sh.rate(sec)
		}
		for i := range sh.keys {
			k := &sh.keys[i]
			n := poisson(r, k.rate*mult)
			for range n {
				end := shapeStart.Add(sec).UnixNano() + r.Int64N(int64(time.Second))
				dur, failed := sh.latency(r, k)
				s := schemas.Span{Key: k.key, Operation: "chat", Provider: "openai", Route: "/v1/chat"}
				for j := range s.TraceID {
					s.TraceID[j] = byte(r.Uint32())
				}
				for j := range s.SpanID {
					s.SpanID[j] = byte(r.Uint32())
				}
				s.EndUnixNano = end
				s.StartUnixNano = end - int64(dur*1e6)
				s.Error = failed
				if failed {
					s.ErrorType = "timeout"
				}
				s.Confidence = clamp01(0.8 + 0.07*r.NormFloat64())
				s.Alignment = clamp01(0.85 + 0.05*r.NormFloat64())
				s.Has = schemas.HasConfidence | schemas.HasAlignment
				for _, inc := range incs {
					if sec >= inc.start && sec < inc.end && inc.match(k.key) {
						inc.apply(r, &s)
					}
				}
				s.Derive()
				span(&s)
			}
		}
		second()
	}
}

func poisson(r *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	if lambda > 30 {
		return max(0, int(math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

func key(tenant, service, model, variant string) schemas.Key {
	return schemas.Key{Tenant: tenant, Service: service, Model: model, Variant: variant}
}

// timeoutShape: a lognormal/Weibull mixture (70% lognormal, 30% Weibull
// k=1.5 — two serving paths) with 0.5% of calls failing at the hard 60 s
// timeout, and a 5% canary on each model.
func timeoutShape() shape {
	var keys []shapeKey
	for mi, m := range []string{"gpt-4o", "claude-3-7", "llama-3-70b"} {
		med := 700 + 300*float64(mi)
		keys = append(keys,
			shapeKey{key("acme", "chat", m, "baseline"), 4 * 0.95, med},
			shapeKey{key("acme", "chat", m, "canary"), 4 * 0.05, med})
	}
	return shape{name: "timeout-mixture+5%-canary", keys: keys,
		latency: func(r *rand.Rand, k *shapeKey) (float64, bool) {
			if r.Float64() < 0.005 {
				return 60000, true
			}
			if r.Float64() < 0.7 {
				return k.median * math.Exp(0.4*r.NormFloat64()), false
			}
			u := 1 - r.Float64()
			return k.median * 1.3 * math.Pow(-math.Log(u), 1/1.5), false
		}}
}

// zipfShape: 60 tenants with Zipf(1.1) weights on 2 models: a few large
// keys and many tiny ones (most under 0.05 calls/s).
func zipfShape() shape {
	var keys []shapeKey
	total := 0.0
	for i := 1; i <= 60; i++ {
		total += math.Pow(float64(i), -1.1)
	}
	for i := 1; i <= 60; i++ {
		w := math.Pow(float64(i), -1.1) / total
		for mi, m := range []string{"gpt-4o-mini", "claude-3-5-haiku"} {
			keys = append(keys, shapeKey{key(fmt.Sprintf("t%02d", i), "search", m, "baseline"), 16 * w / 2, 500 + 200*float64(mi)})
		}
	}
	return shape{name: "zipf-tenants", keys: keys,
		latency: func(r *rand.Rand, k *shapeKey) (float64, bool) {
			return k.median * math.Exp(0.5*r.NormFloat64()), r.Float64() < 0.001
		}}
}

// burstyShape: rates that alternate bursts (3x) and quiet nights (0.05x)
// every 20 minutes of event time.
func burstyShape() shape {
	var keys []shapeKey
	for _, svc := range []string{"chat", "batch"} {
		keys = append(keys, shapeKey{key("initech", svc, "gpt-4o", "baseline"), 3, 900})
	}
	return shape{name: "bursty-quiet-nights", keys: keys,
		latency: func(r *rand.Rand, k *shapeKey) (float64, bool) {
			return k.median * math.Exp(0.45*r.NormFloat64()), r.Float64() < 0.002
		},
		rate: func(t time.Duration) float64 {
			if (t/(20*time.Minute))%2 == 0 {
				return 3
			}
			return 0.05
		}}
}

// heterogeneousShape: six tenants on two models, one of them (slowco)
// with calls twice as long as the others' on both: one SLO per
// (service, model) holds keys whose P99.9 differ by 2x.
func heterogeneousShape() shape {
	var keys []shapeKey
	for _, tn := range []string{"acme", "globex", "initech", "umbrella", "hooli", "slowco"} {
		for mi, m := range []string{"gpt-4o", "claude-3-7"} {
			med := 800 + 200*float64(mi)
			if tn == "slowco" {
				med *= 2
			}
			keys = append(keys, shapeKey{key(tn, "chat", m, "baseline"), 1.5, med})
		}
	}
	return shape{name: "one-tenant-2x", keys: keys,
		latency: func(r *rand.Rand, k *shapeKey) (float64, bool) {
			return k.median * math.Exp(0.45*r.NormFloat64()), r.Float64() < 0.002
		}}
}

// outlierShape: clean lognormal calls with isolated extreme ones — 1 in
// 10,000 calls succeeds just under a 60 s timeout (55-59.9 s) — on four
// tenants of one model: about one such call per key every 45 minutes.
func outlierShape() shape {
	var keys []shapeKey
	for _, tn := range []string{"acme", "globex", "initech", "umbrella"} {
		keys = append(keys, shapeKey{key(tn, "chat", "gpt-4o", "baseline"), 4, 900})
	}
	return shape{name: "isolated-extreme-calls", keys: keys,
		latency: func(r *rand.Rand, k *shapeKey) (float64, bool) {
			if r.Float64() < 1e-4 {
				return 55000 + 4900*r.Float64(), false
			}
			return k.median * math.Exp(0.4*r.NormFloat64()), r.Float64() < 0.001
		}}
}
