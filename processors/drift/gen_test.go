package drift

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// stream is one key's generated traffic: spans at rate per second whose
// confidence is logistic(mu + s*N(0,1)) — a Beta-like score in (0, 1)
// (median 0.82 for mu 1.5) — and, from shiftAt on, logistic(mu - shift +
// s*N(0,1)).
type stream struct {
	key     schemas.Key
	rate    float64
	mu, s   float64
	shift   float64       // 0: no incident
	shiftAt time.Duration // from t0
}

type traffic struct {
	seed     uint64
	streams  []stream
	duration time.Duration
}

// t0 is the generated traffic's start: a round minute (2025-01-01 UTC).
const t0 = int64(1735689600) * int64(time.Second)

// referenceTraffic is three keys at 5 spans/s each, 2 h.
func referenceTraffic(seed uint64) traffic {
	return traffic{seed: seed, duration: 2 * time.Hour, streams: []stream{
		{key: schemas.Key{Tenant: "acme", Service: "chat", Model: "m-large"}, rate: 5, mu: 1.5, s: 0.6},
		{key: schemas.Key{Tenant: "acme", Service: "search", Model: "m-small"}, rate: 5, mu: 2.0, s: 0.8},
		{key: schemas.Key{Tenant: "globex", Service: "chat", Model: "m-large"}, rate: 5, mu: 1.2, s: 0.5},
	}}
}

// canaryTraffic is two (tenant, service, model) groups, each with a
// baseline at 8 spans/s and a canary at 2 spans/s, plus an unrelated
// variant that canary mode ignores; 2 h.
func canaryTraffic(seed uint64) traffic {
	var ss []stream
	for _, g := range []struct {
		tenant, model string
		mu, s         float64
	}{{"acme", "m-large", 1.5, 0.6}, {"globex", "m-small", 1.0, 0.7}} {
		k := schemas.Key{Tenant: g.tenant, Service: "chat", Model: g.model}
		base, can, other := k, k, k
		base.Variant, can.Variant, other.Variant = "baseline", "canary", "shadow"
		ss = append(ss,
			stream{key: base, rate: 8, mu: g.mu, s: g.s},
			stream{key: can, rate: 2, mu: g.mu, s: g.s},
			stream{key: other, rate: 1, mu: g.mu - 1, s: g.s})
	}
	return traffic{seed: seed, duration: 2 * time.Hour, streams: ss}
}

// spans generates the traffic in event-time order: per stream, spans every
// 1/rate seconds with a uniform jitter inside the gap.
func (tr traffic) spans() []schemas.Span {
	r := rand.New(rand.NewPCG(tr.seed, 0xd41f7))
	var out []schemas.Span
	for _, st := range tr.streams {
		gap := int64(float64(time.Second) / st.rate)
		for t := int64(0); t < int64(tr.duration); t += gap {
			end := t0 + t + r.Int64N(gap)
			mu := st.mu
			if st.shift != 0 && end >= t0+int64(st.shiftAt) {
				mu -= st.shift
			}
			conf := 1 / (1 + math.Exp(-(mu + st.s*r.NormFloat64())))
			s := proctest.NewSpan(r, st.key, "", end, 1000) // 1 s calls
			s.Confidence, s.Has = conf, schemas.HasConfidence
			out = append(out, s)
		}
	}
	proctest.SortByEnd(out)
	return out
}

func newDrift(t testing.TB, cfg Config) *Processor {
	t.Helper()
	p, err := New(processors.Meta{SLO: "chat-quality", ConfigVersion: "v1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func canaryConfig() Config {
	c := DefaultConfig()
	c.Mode = ModeCanary
	return c
}
