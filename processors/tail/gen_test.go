package tail

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// traffic describes generated spans: keys at a steady rate with lognormal
// latencies, optionally with a tail blow-up on one key from a start time.
type traffic struct {
	seed     uint64
	keys     []schemas.Key
	rate     float64       // spans per second per key
	duration time.Duration // event time generated, from t0
	median   float64       // lognormal median latency, ms
	sigma    float64       // lognormal shape
	// Incident: from incidentAt (relative to t0) on, a fraction of the
	// incident key's calls get latency xm * U^(-1/alpha) (Pareto) instead.
	incident    bool
	incidentKey int
	incidentAt  time.Duration
	fraction    float64
	xm, alpha   float64
}

// t0 is the generated traffic's start: a round minute (2025-01-01 UTC).
const t0 = int64(1735689600) * int64(time.Second)

func baseTraffic(seed uint64) traffic {
	return traffic{
		seed: seed,
		keys: []schemas.Key{
			{Tenant: "acme", Service: "chat", Model: "m-large"},
			{Tenant: "acme", Service: "search", Model: "m-small"},
			{Tenant: "globex", Service: "chat", Model: "m-large"},
		},
		rate:     10,
		duration: 2 * time.Hour,
		median:   800,
		sigma:    0.5,
	}
}

// trueP999 is the lognormal's P99.9 without incident: median*exp(sigma*z).
func (tr traffic) trueQuantile(p float64) float64 {
	return tr.median * math.Exp(tr.sigma*math.Sqrt2*math.Erfinv(2*p-1))
}

// spans generates the traffic in event-time order: per key, spans every
// 1/rate seconds with a uniform jitter inside the gap.
func (tr traffic) spans() []schemas.Span {
	r := rand.New(rand.NewPCG(tr.seed, 0x7a11))
	gap := time.Duration(float64(time.Second) / tr.rate)
	n := int(tr.duration / gap)
	out := make([]schemas.Span, 0, n*len(tr.keys))
	for i := 0; i < n; i++ {
		for ki, k := range tr.keys {
			end := t0 + int64(i)*int64(gap) + r.Int64N(int64(gap))
			lat := tr.median * math.Exp(tr.sigma*r.NormFloat64())
			if tr.incident && ki == tr.incidentKey && end >= t0+int64(tr.incidentAt) && r.Float64() < tr.fraction {
				lat = tr.xm * math.Pow(1-r.Float64(), -1/tr.alpha)
			}
			out = append(out, proctest.NewSpan(r, k, "", end, lat))
		}
	}
	proctest.SortByEnd(out)
	return out
}

func newTail(t testing.TB, cfg Config) *Processor {
	t.Helper()
	p, err := New(processors.Meta{SLO: "chat-latency", ConfigVersion: "v1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
