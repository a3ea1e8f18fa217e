package decay

import (
	"math"
	"math/rand/v2"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Generated streams start at t0 (a round hour).
const (
	t0     = proctest.T0
	minute = proctest.Minute
)

var (
	keyLarge  = schemas.Key{Tenant: "acme", Service: "chat-api", Model: "gpt-large", Variant: "baseline"}
	keyCanary = schemas.Key{Tenant: "acme", Service: "chat-api", Model: "gpt-large", Variant: "canary"}
	keySmall  = schemas.Key{Tenant: "globex", Service: "search-api", Model: "gpt-small", Variant: "baseline"}
)

// stream describes one key's traffic.
type stream struct {
	key       schemas.Key
	perMinute int
	mean      float64 // typical score (logit-normal centre)
}

var streams = []stream{
	{keyLarge, 120, 0.85},
	{keyCanary, 15, 0.85},
	{keySmall, 60, 0.78},
}

// script is the incidents of a generated stream; a zero time is "none".
type script struct {
	// declineFrom: from then on the alignment of keyLarge falls by
	// declinePerMin score units per minute, down to a floor 0.45 below its
	// usual level, where it stays.
	declineFrom   int64
	declinePerMin float64
	// zeroBurstFrom..zeroBurstTo: on keySmall, one score in ten is a 0
	// (a scorer outage), the rest as usual.
	zeroBurstFrom, zeroBurstTo int64
}

// generate makes spans with alignment and confidence scores over
// [from, to), sorted by end time. Scores are logit-normal around the
// stream's mean (a Beta-like shape in (0, 1)); one in 500 is exactly 0.
func generate(seed uint64, from, to int64, sc script) []schemas.Span {
	r := rand.New(rand.NewPCG(seed, 0xdeca1))
	var out []schemas.Span
	for m := from; m < to; m += minute {
		for _, st := range streams {
			n := st.perMinute*9/10 + r.IntN(st.perMinute/5+1)
			for range n {
				end := m + r.Int64N(minute)
				s := proctest.NewSpan(r, st.key, "chat", end, proctest.Lognormal(r, 900, 0.3))
				a := logitNormal(r, st.mean, 0.6)
				if sc.declineFrom != 0 && st.key == keyLarge && end >= sc.declineFrom {
					drop := min(sc.declinePerMin*float64(end-sc.declineFrom)/float64(minute), 0.45)
					a = max(a-drop, 0)
				}
				if r.IntN(500) == 0 {
					a = 0
				}
				if st.key == keySmall && end >= sc.zeroBurstFrom && end < sc.zeroBurstTo && r.IntN(10) == 0 {
					a = 0
				}
				s.Alignment = a
				s.Confidence = logitNormal(r, 0.7, 0.8)
				s.Has |= schemas.HasAlignment | schemas.HasConfidence
				out = append(out, s)
			}
		}
	}
	proctest.SortByEnd(out)
	return out
}

// logitNormal draws 1/(1+exp(-(logit(mean) + s·z))).
func logitNormal(r *rand.Rand, mean, s float64) float64 {
	mu := math.Log(mean / (1 - mean))
	return 1 / (1 + math.Exp(-(mu + s*r.NormFloat64())))
}

func processorsMetric(m string) processors.Metric { return processors.Metric(m) }
