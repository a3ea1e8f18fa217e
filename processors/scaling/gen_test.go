package scaling

import (
	"math/rand/v2"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Generated streams start at t0 (a round hour).
const (
	t0     = proctest.T0
	minute = proctest.Minute
)

// category is one kind of request in the generated traffic.
type category struct {
	route, model string
	share        float64 // of the baseline mix
	medianMs     float64
	sigma        float64 // of log latency
}

// baseline is a skewed mix (normalised entropy ≈ 0.64: neither high nor
// low) whose latency standard deviation is ≈ 650 ms.
var baseline = []category{
	{"chat", "gpt-small", 0.65, 700, 0.3},
	{"chat", "gpt-large", 0.14, 1500, 0.3},
	{"summarize", "gpt-large", 0.09, 2500, 0.35},
	{"embed", "embed-v3", 0.06, 80, 0.2},
	{"extract", "gpt-small", 0.04, 900, 0.3},
	{"code", "gpt-large", 0.02, 3000, 0.4},
}

// incidents scripted into a stream; zero times mean "none".
type script struct {
	// surgeFrom..surgeTo: on tenant acme, three times the baseline rate of
	// extra traffic spread evenly over every category, with long-context
	// latencies (scale-out).
	surgeFrom, surgeTo int64
	// quietFrom..quietTo: tenant globex sends only a third of its rate,
	// all of one batch route with steady latencies (scale-in hint).
	quietFrom, quietTo int64
}

const perMinute = 200 // baseline spans per minute per tenant

// generate makes the spans of tenants acme and globex (service chat-api,
// variants baseline and canary) over [from, to), sorted by end time.
func generate(seed uint64, from, to int64, sc script) []schemas.Span {
	r := rand.New(rand.NewPCG(seed, 0x5ca1e))
	var out []schemas.Span
	for m := from; m < to; m += minute {
		for _, tenant := range []string{"acme", "globex"} {
			quiet := tenant == "globex" && m >= sc.quietFrom && m < sc.quietTo
			surge := tenant == "acme" && m >= sc.surgeFrom && m < sc.surgeTo
			n := perMinute - 20 + r.IntN(41)
			if quiet {
				n /= 3
			}
			for range n {
				end := m + r.Int64N(minute)
				if quiet {
					out = append(out, proctest.NewSpan(r, key(r, tenant, "gpt-small"), "batch", end, proctest.Lognormal(r, 400, 0.15)))
					continue
				}
				c := pick(r)
				out = append(out, proctest.NewSpan(r, key(r, tenant, c.model), c.route, end, proctest.Lognormal(r, c.medianMs, c.sigma)))
			}
			if surge {
				for range 3 * perMinute {
					end := m + r.Int64N(minute)
					c := baseline[r.IntN(len(baseline))]
					med := c.medianMs * 2.5
					out = append(out, proctest.NewSpan(r, key(r, tenant, c.model), c.route, end, proctest.Lognormal(r, med, 0.5)))
				}
			}
		}
	}
	proctest.SortByEnd(out)
	return out
}

func key(r *rand.Rand, tenant, model string) schemas.Key {
	v := "baseline"
	if r.IntN(10) == 0 {
		v = "canary"
	}
	return schemas.Key{Tenant: tenant, Service: "chat-api", Model: model, Variant: v}
}

func pick(r *rand.Rand) category {
	u := r.Float64()
	for _, c := range baseline {
		if u < c.share {
			return c
		}
		u -= c.share
	}
	return baseline[0]
}
