package tail

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

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
			s := schemas.Span{Key: k, EndUnixNano: end, DurationMs: lat}
			s.StartUnixNano = end - int64(lat*1e6)
			fill(r, s.TraceID[:])
			fill(r, s.SpanID[:])
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b schemas.Span) int { return cmpInt(a.EndUnixNano, b.EndUnixNano) })
	return out
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// collect is an Emitter that keeps verdicts.
type collect struct{ verdicts []schemas.Verdict }

func (c *collect) Verdict(v schemas.Verdict) { c.verdicts = append(c.verdicts, v) }
func (c *collect) Rollup(schemas.Rollup)     {}

// drive feeds spans (sorted by end time, or shuffled inside each
// evaluation interval) to p as the engine does: every span with event time
// before boundary b, then Evaluate(b), for each boundary after the first
// span up to and including the one after the last. With stopAt > 0 it
// stops after evaluating boundary stopAt and returns the index of the
// next span to feed.
func drive(t *testing.T, p *Processor, spans []schemas.Span, from int, startBoundary, stopAt int64, c *collect) int {
	t.Helper()
	every := int64(p.Interval())
	b := startBoundary
	if b == 0 {
		b = (spans[0].EndUnixNano/every + 1) * every
	}
	i := from
	for {
		for i < len(spans) && spans[i].EndUnixNano < b {
			p.ObserveSpan(spans[i].Key, &spans[i])
			i++
		}
		p.Evaluate(b, c)
		if b == stopAt || i == len(spans) {
			return i
		}
		b += every
	}
}

// shuffleWithin shuffles spans inside each interval of every ns.
func shuffleWithin(spans []schemas.Span, every int64, seed uint64) []schemas.Span {
	out := slices.Clone(spans)
	r := rand.New(rand.NewPCG(seed, 1))
	for lo := 0; lo < len(out); {
		hi := lo
		slot := out[lo].EndUnixNano / every
		for hi < len(out) && out[hi].EndUnixNano/every == slot {
			hi++
		}
		part := out[lo:hi]
		r.Shuffle(len(part), func(i, j int) { part[i], part[j] = part[j], part[i] })
		lo = hi
	}
	return out
}

// formatVerdicts renders verdicts one a line for the golden files, numbers
// to 4 significant digits so that the files do not depend on the last bits
// of floating point (FMA contraction differs between architectures).
func formatVerdicts(vs []schemas.Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "t=%dm key=%s metric=%s status=%s value=%.4g threshold=%.4g interval=[%.4g,%.4g]@%.4g method=%s n=%d",
			(v.WindowEndUnixNano-t0)/int64(time.Minute), v.Key.String(), v.Metric, v.Status, v.Value, v.Threshold,
			v.Lower, v.Upper, v.IntervalLevel, v.Method, v.N)
		for _, d := range v.Details {
			fmt.Fprintf(&b, " %s=%.4g", d.Name, d.Value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// checkGolden compares got with testdata/golden/name, rewriting it with
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
		for i := range min(len(wl), len(gl)) {
			if wl[i] != gl[i] {
				t.Fatalf("%s differs at line %d:\nwant %s\ngot  %s\n(run go test -update if the change is intended)", path, i+1, wl[i], gl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d (run go test -update if the change is intended)", path, len(gl), len(wl))
	}
}

func newTail(t testing.TB, cfg Config) *Processor {
	t.Helper()
	p, err := New(processors.Meta{SLO: "chat-latency", ConfigVersion: "v1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func validateAll(t *testing.T, vs []schemas.Verdict) {
	t.Helper()
	for i := range vs {
		if err := vs[i].Validate(); err != nil {
			t.Fatalf("verdict %d (%s %s): %v", i, vs[i].Key.String(), vs[i].Metric, err)
		}
	}
}
