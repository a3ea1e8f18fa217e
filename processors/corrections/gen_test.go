package corrections

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Generated streams start at t0 (a round hour).
const (
	t0     = proctest.T0
	minute = proctest.Minute
	sec    = proctest.Second
)

var (
	keyBase   = schemas.Key{Tenant: "acme", Service: "chat-api", Model: "gpt-large", Variant: "baseline"}
	keyCanary = schemas.Key{Tenant: "acme", Service: "chat-api", Model: "gpt-large", Variant: "canary"}
	keySearch = schemas.Key{Tenant: "globex", Service: "search-api", Model: "gpt-small", Variant: "baseline"}
	keyOther  = schemas.Key{Tenant: "initech", Service: "chat-api", Model: "gpt-small", Variant: "baseline"}
)

type stream struct {
	key       schemas.Key
	perMinute int
}

var streams = []stream{{keyBase, 100}, {keyCanary, 50}, {keySearch, 60}, {keyOther, 40}}

// baseRate is the share of responses users correct in normal times.
const baseRate = 0.015

// script holds the incidents of a stream; zero times mean none.
type script struct {
	// spikeFrom..spikeTo: users correct 60% of the answers of keySearch.
	spikeFrom, spikeTo int64
	// canaryFrom: from then on users correct 40% of the canary's answers.
	canaryFrom int64
}

// generate makes the spans of the streams over [from, to) and the
// corrections users send about them (after an exponential delay of mean
// 40 s; 30% carry only the session id; half name the model and variant),
// plus about one stray correction a minute that matches no span, all in
// event-time order.
func generate(seed uint64, from, to int64, sc script) []proctest.Event {
	r := rand.New(rand.NewPCG(seed, 0xc0ffee))
	var out []proctest.Event
	seq := 0
	for m := from; m < to; m += minute {
		for _, st := range streams {
			n := st.perMinute*9/10 + r.IntN(st.perMinute/5+1)
			for range n {
				end := m + r.Int64N(minute)
				s := proctest.NewSpan(r, st.key, "chat", end, proctest.Lognormal(r, 800, 0.3))
				s.SessionID = fmt.Sprintf("%s-%s-s%d", st.key.Tenant, st.key.Variant, r.IntN(2000))
				out = append(out, proctest.Event{T: end, Span: &s})
				p := baseRate
				if st.key == keySearch && end >= sc.spikeFrom && end < sc.spikeTo {
					p = 0.6
				}
				if st.key == keyCanary && sc.canaryFrom != 0 && end >= sc.canaryFrom {
					p = 0.4
				}
				if r.Float64() >= p {
					continue
				}
				seq++
				c := &schemas.Correction{
					SchemaVersion: 1,
					EventID:       fmt.Sprintf("ev-%d-%d", seed, seq),
					TimeUnixNano:  end + int64(r.ExpFloat64()*40*float64(time.Second)),
					Tenant:        st.key.Tenant,
					Kind:          schemas.CorrectionKinds[r.IntN(len(schemas.CorrectionKinds))],
				}
				if r.IntN(10) < 3 {
					c.SessionID = s.SessionID
				} else {
					c.TraceID = s.TraceID
				}
				if r.IntN(2) == 0 {
					c.Model, c.Variant = st.key.Model, st.key.Variant
				}
				if c.TimeUnixNano < to {
					out = append(out, proctest.Event{T: c.TimeUnixNano, Correction: c})
				}
			}
		}
		if r.IntN(3) > 0 {
			seq++
			c := &schemas.Correction{SchemaVersion: 1, EventID: fmt.Sprintf("stray-%d-%d", seed, seq),
				TimeUnixNano: m + r.Int64N(minute), Tenant: "acme", Model: "gpt-large", Variant: "baseline", Kind: schemas.KindThumbsDown}
			proctest.FillRandom(r, c.TraceID[:])
			out = append(out, proctest.Event{T: c.TimeUnixNano, Correction: c})
		}
	}
	proctest.SortEvents(out)
	return out
}
