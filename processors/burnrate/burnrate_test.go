package burnrate

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

const minute = proctest.Minute

var key = schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "baseline"}

// traffic makes rate calls per minute from t0 for minutes, each bad with
// probability errRate(t).
func traffic(r *rand.Rand, t0 int64, minutes, rate int, errRate func(t int64) float64) []schemas.Span {
	var out []schemas.Span
	for m := 0; m < minutes; m++ {
		for i := 0; i < rate; i++ {
			end := t0 + int64(m)*minute + r.Int64N(minute)
			out = append(out, schemas.Span{Key: key, StartUnixNano: end - 1e8, EndUnixNano: end, DurationMs: 100,
				Error: r.Float64() < errRate(end)})
		}
	}
	return out
}

func run(t *testing.T, cfg Config, spans []schemas.Span, t0 int64, minutes int) []schemas.Verdict {
	t.Helper()
	p, err := New(processors.Meta{SLO: "avail", ConfigVersion: "v1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out proctest.Collector
	i := 0
	for m := 1; m <= minutes; m++ {
		now := t0 + int64(m)*minute
		for i < len(spans) && spans[i].EndUnixNano < now {
			p.ObserveSpan(key, &spans[i])
			i++
		}
		p.Evaluate(now, &out)
	}
	proctest.ValidateAll(t, out.Verdicts)
	return out.Verdicts
}

func sorted(xs []schemas.Span) []schemas.Span {
	proctest.SortByEnd(xs)
	return xs
}

func TestPageFiresOnErrorBurstAndNotOnBaseline(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	incident := t0 + 7*60*minute // after 7 h of baseline
	spans := sorted(traffic(r, t0, 8*60, 200, func(t int64) float64 {
		if t >= incident && t < incident+15*minute {
			// 500x the budget of a 99.9% SLO: the 1h window passes 14.4 after
			// 14.4*0.001*60min/0.5 = 1.7 minutes. (At 20% errors it takes 4.3
			// minutes: detection time is factor*(1-target)*long/error rate.)
			return 0.5
		}
		return 0.0002 // a fifth of the budget
	}))
	vs := run(t, DefaultConfig(), spans, t0, 8*60)
	var firstBreach int64
	for _, v := range vs {
		if v.Metric != MetricPage {
			continue
		}
		if v.Status == schemas.StatusBreach {
			if v.WindowEndUnixNano < incident {
				t.Fatalf("page before the incident at %v: %+v", time.Duration(v.WindowEndUnixNano-t0), v)
			}
			if firstBreach == 0 {
				firstBreach = v.WindowEndUnixNano
			}
		}
	}
	if firstBreach == 0 {
		t.Fatal("no page for a 50% error burst")
	}
	if d := firstBreach - incident; d > 2*minute {
		t.Fatalf("page %v after the burst started, want within 2 evaluations", time.Duration(d))
	}
}

func TestWindowsMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	t0 := int64(1_700_000_040) * int64(time.Second) / minute * minute
	spans := sorted(traffic(r, t0, 30*60, 20, func(t int64) float64 { return 0.01 + 0.01*math.Sin(float64(t)/3e12) }))
	cfg := DefaultConfig()
	cfg.MinEvents = 1
	p, _ := New(processors.Meta{SLO: "x"}, cfg)
	proctest.ObserveAll(p, spans)
	now := t0 + 30*60*minute - 17*minute
	ks := p.keys[key]
	for _, d := range []time.Duration{5 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour} {
		var wantG, wantB float64
		for _, s := range spans {
			if s.EndUnixNano >= now-int64(d) && s.EndUnixNano < now {
				if s.Error {
					wantB++
				} else {
					wantG++
				}
			}
		}
		g, b := p.window(ks, now, int64(d))
		tol := 0.0
		if int64(d) > fineSpan {
			tol = 2 * 20 * 60 // at most one hour of calls at each edge, prorated
		}
		if math.Abs(g+b-(wantG+wantB)) > tol || math.Abs(b-wantB) > tol/10+0.5 && tol == 0 {
			t.Errorf("window %v: got %v good %v bad, want %v %v", d, g, b, wantG, wantB)
		}
		if tol > 0 && math.Abs((b/(g+b))-(wantB/(wantG+wantB))) > 0.002 {
			t.Errorf("window %v: error ratio %v, want %v", d, b/(g+b), wantB/(wantG+wantB))
		}
	}
}

func TestSnapshotContinuesIdentically(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	spans := sorted(traffic(r, t0, 120, 50, func(int64) float64 { return 0.05 }))
	cfg := DefaultConfig()
	want := run(t, cfg, spans, t0, 120)

	p, _ := New(processors.Meta{SLO: "avail", ConfigVersion: "v1"}, cfg)
	var out proctest.Collector
	i := 0
	for m := 1; m <= 120; m++ {
		now := t0 + int64(m)*minute
		for i < len(spans) && spans[i].EndUnixNano < now {
			p.ObserveSpan(key, &spans[i])
			i++
		}
		p.Evaluate(now, &out)
		if m == 60 {
			b, _ := p.MarshalBinary()
			p, _ = New(processors.Meta{SLO: "avail", ConfigVersion: "v1"}, cfg)
			if err := p.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !reflect.DeepEqual(out.Verdicts, want) {
		t.Fatal("restored processor diverged")
	}
	snap, _ := p.MarshalBinary()
	newP := func() processors.Processor {
		q, _ := New(processors.Meta{SLO: "avail", ConfigVersion: "v1"}, cfg)
		return q
	}
	proctest.RejectsDamage(t, newP, snap, ErrCorrupt)
	other := cfg
	other.Every = 30 * time.Second
	if q, _ := New(processors.Meta{SLO: "avail"}, other); q.UnmarshalBinary(snap) == nil {
		t.Fatal("snapshot restored into another configuration")
	}
}

func TestInsufficientDataBelowMinEvents(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	spans := sorted(traffic(r, t0, 10, 5, func(int64) float64 { return 1 }))
	vs := run(t, DefaultConfig(), spans, t0, 10)
	for _, v := range vs {
		if v.Status != schemas.StatusInsufficientData || v.Value != 0 {
			t.Fatalf("50 calls in all, MinEvents 100: got %s value %v", v.Status, v.Value)
		}
	}
}

func BenchmarkObserveSpan(b *testing.B) {
	p, _ := New(processors.Meta{SLO: "x"}, DefaultConfig())
	s := schemas.Span{Key: key, EndUnixNano: 1_700_000_000e9, DurationMs: 10}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.EndUnixNano += 1e6
		p.ObserveSpan(key, &s)
	}
	buf, _ := p.MarshalBinary()
	b.ReportMetric(float64(len(buf)), "state-bytes/key")
}
