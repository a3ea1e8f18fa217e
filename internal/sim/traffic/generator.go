package traffic

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// Batch is the traffic of one step of event time.
type Batch struct {
	// Spans are LLM calls, in the order generated.
	Spans []schemas.Span
	// Other are spans without a model (HTTP handlers, database calls)
	// that share traces with the LLM calls; decoders skip them.
	Other []schemas.Span
	// Corrections are the user corrections whose time falls in the step.
	Corrections []schemas.Correction
}

// keyProfile is one (tenant, service, model, variant) and its traits.
type keyProfile struct {
	key    schemas.Key
	weight float64
	median float64 // ms
}

// Generator makes the traffic of a Scenario.
type Generator struct {
	sc    Scenario
	rng   *rand.Rand
	start int64
	t     int64 // event time reached, Unix ns
	carry float64

	keys  []keyProfile
	cum   []float64 // cumulative weights
	queue correctionQueue
	seq   uint64
}

// New returns a generator whose event time starts at start.
func New(sc Scenario, start time.Time) (*Generator, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{sc: sc, rng: rand.New(rand.NewPCG(sc.Seed, sc.Seed^0x9e3779b97f4a7c15)), start: start.UnixNano(), t: start.UnixNano()}
	base := float64(sc.MedianLatency) / 1e6
	for ti, tenant := range sc.Tenants {
		for si, svc := range sc.Services {
			for mi, model := range sc.Models {
				// Models and services differ in speed; deterministic from
				// their positions.
				median := base * (0.7 + 0.3*float64(mi)) * (1 + 0.15*float64(si)) * (1 + 0.05*float64(ti))
				w := 1.0
				if sc.CanaryShare > 0 {
					g.keys = append(g.keys, keyProfile{schemas.Key{Tenant: tenant, Service: svc, Model: model, Variant: "canary"}, w * sc.CanaryShare, median})
					w *= 1 - sc.CanaryShare
				}
				g.keys = append(g.keys, keyProfile{schemas.Key{Tenant: tenant, Service: svc, Model: model, Variant: "baseline"}, w, median})
			}
		}
	}
	total := 0.0
	for _, k := range g.keys {
		total += k.weight
		g.cum = append(g.cum, total)
	}
	for i := range g.cum {
		g.cum[i] /= total
	}
	return g, nil
}

// Now is the event time reached.
func (g *Generator) Now() time.Time { return time.Unix(0, g.t) }

// Offset is the event time elapsed since the start.
func (g *Generator) Offset() time.Duration { return time.Duration(g.t - g.start) }

// Done reports whether the scenario's duration has passed.
func (g *Generator) Done() bool { return g.sc.Duration > 0 && g.Offset() >= g.sc.Duration }

// Keys lists every key the scenario generates.
func (g *Generator) Keys() []schemas.Key {
	out := make([]schemas.Key, len(g.keys))
	for i, k := range g.keys {
		out[i] = k.key
	}
	return out
}

// Next generates the calls that end in [Now, Now+step) and the corrections
// due in it, and advances Now.
func (g *Generator) Next(step time.Duration) Batch {
	var b Batch
	from, to := g.t, g.t+int64(step)
	g.carry += g.sc.Rate * step.Seconds()
	n := int(g.carry)
	g.carry -= float64(n)
	// Sized up front: growing the batch call by call was a third of a
	// study's time.
	b.Spans = make([]schemas.Span, 0, n)
	b.Other = make([]schemas.Span, 0, int(float64(n)*g.sc.NonLLMShare*1.2)+4)
	for i := 0; i < n; i++ {
		end := from + g.rng.Int64N(int64(step))
		g.call(&b, end)
	}
	for len(g.queue) > 0 && g.queue[0].TimeUnixNano < to {
		c := heap.Pop(&g.queue).(schemas.Correction)
		b.Corrections = append(b.Corrections, c)
	}
	g.t = to
	return b
}

// call generates one LLM call ending at end.
func (g *Generator) call(b *Batch, end int64) {
	r := g.rng
	kp := &g.keys[g.pick()]
	off := time.Duration(end - g.start)
	s := schemas.Span{Key: kp.key, Operation: "chat", Provider: provider(kp.key.Model), ResponseModel: kp.key.Model}
	binary.BigEndian.PutUint64(s.TraceID[:8], r.Uint64())
	binary.BigEndian.PutUint64(s.TraceID[8:], r.Uint64())
	binary.BigEndian.PutUint64(s.SpanID[:], r.Uint64())
	s.SessionID = "s-" + kp.key.Tenant + "-" + strconv.Itoa(r.IntN(2000))

	sigma := g.sc.LatencySigma
	routeSkew := g.sc.RouteSkew
	errRate := g.sc.ErrorRate
	corrRate := g.sc.CorrectionRate
	tail, confShift, alignShift := 0.0, 0.0, 0.0
	for i := range g.sc.Incidents {
		inc := &g.sc.Incidents[i]
		if !inc.Active(off) || !inc.Target.matches(kp.key) {
			continue
		}
		switch inc.Kind {
		case TailBlowup:
			tail = inc.Magnitude
		case CanaryDrift:
			confShift = inc.Magnitude
		case AlignmentDecay:
			alignShift = inc.Magnitude * float64(off-inc.Start) / float64(inc.End-inc.Start)
		case CorrectionSpike:
			corrRate = inc.Magnitude
		case MixShift:
			sigma *= inc.Magnitude
			routeSkew = 0
		case ErrorBurst:
			errRate = inc.Magnitude
		}
	}
	d := kp.median * math.Exp(sigma*r.NormFloat64())
	if tail > 0 && r.Float64() < tail {
		// Pareto(alpha 1.5) multiples of 4x the median.
		d += 4 * kp.median * (math.Pow(1-r.Float64(), -1/1.5) - 1) * 3
	}
	dur := int64(d * 1e6)
	s.EndUnixNano = end
	s.StartUnixNano = end - max(dur, 1e6)
	s.TTFTMs = d * (0.15 + 0.2*r.Float64())
	s.InputTokens = int64(math.Exp(math.Log(500) + 0.6*r.NormFloat64()))
	s.OutputTokens = 2 + int64(math.Exp(math.Log(200)+0.5*r.NormFloat64()))
	s.Confidence = clamp01(0.82 - confShift + 0.06*r.NormFloat64())
	s.Alignment = clamp01(0.88 - alignShift + 0.04*r.NormFloat64())
	s.Has = schemas.HasTTFT | schemas.HasInputTokens | schemas.HasOutputTokens | schemas.HasConfidence | schemas.HasAlignment
	if r.Float64() < routeSkew {
		s.Route = g.sc.Routes[0]
	} else {
		s.Route = g.sc.Routes[r.IntN(len(g.sc.Routes))]
	}
	if r.Float64() < errRate {
		s.Error = true
		s.ErrorType = []string{"timeout", "rate_limited", "server_error"}[r.IntN(3)]
		s.FinishReason = "error"
	} else {
		s.FinishReason = "stop"
	}
	s.Derive()
	b.Spans = append(b.Spans, s)

	if r.Float64() < g.sc.NonLLMShare {
		o := schemas.Span{TraceID: s.TraceID, Key: schemas.Key{Tenant: kp.key.Tenant, Service: kp.key.Service},
			StartUnixNano: s.StartUnixNano - 2e6, EndUnixNano: s.EndUnixNano + 1e6}
		binary.BigEndian.PutUint64(o.SpanID[:], r.Uint64())
		o.Derive()
		b.Other = append(b.Other, o)
	}
	if r.Float64() < corrRate {
		g.correct(&s)
	}
}

// correct schedules a user correction of s: some seconds after the answer,
// by trace id (80%) or only by session id.
func (g *Generator) correct(s *schemas.Span) {
	r := g.rng
	g.seq++
	delay := int64(math.Min(-math.Log(1-r.Float64())*20, 300) * 1e9)
	c := schemas.Correction{
		SchemaVersion: schemas.CorrectionSchemaVersion,
		EventID:       "c-" + strconv.FormatUint(g.sc.Seed, 36) + "-" + strconv.FormatUint(g.seq, 36),
		TimeUnixNano:  s.EndUnixNano + 1e9 + delay,
		Tenant:        s.Key.Tenant,
		SessionID:     s.SessionID,
		Kind:          schemas.CorrectionKinds[r.IntN(len(schemas.CorrectionKinds))],
	}
	if r.Float64() < 0.8 {
		c.TraceID = s.TraceID
	}
	if r.Float64() < 0.5 {
		c.Model, c.Variant = s.Key.Model, s.Key.Variant
	}
	heap.Push(&g.queue, c)
}

func (g *Generator) pick() int {
	u := g.rng.Float64()
	lo, hi := 0, len(g.cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if g.cum[mid] < u {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (t Target) matches(k schemas.Key) bool {
	return (t.Tenant == "" || t.Tenant == k.Tenant) && (t.Service == "" || t.Service == k.Service) &&
		(t.Model == "" || t.Model == k.Model) && (t.Variant == "" || t.Variant == k.Variant)
}

func provider(model string) string {
	switch {
	case len(model) >= 3 && model[:3] == "gpt":
		return "openai"
	case len(model) >= 6 && model[:6] == "claude":
		return "anthropic"
	}
	return "meta"
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// correctionQueue is a min-heap of corrections by time, then event id.
type correctionQueue []schemas.Correction

func (q correctionQueue) Len() int { return len(q) }
func (q correctionQueue) Less(i, j int) bool {
	if q[i].TimeUnixNano != q[j].TimeUnixNano {
		return q[i].TimeUnixNano < q[j].TimeUnixNano
	}
	return q[i].EventID < q[j].EventID
}
func (q correctionQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *correctionQueue) Push(x any)   { *q = append(*q, x.(schemas.Correction)) }
func (q *correctionQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
