package drift

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
			s := schemas.Span{Key: st.key, EndUnixNano: end, StartUnixNano: end - int64(time.Second), DurationMs: 1000}
			s.Confidence = 1 / (1 + math.Exp(-(mu + st.s*r.NormFloat64())))
			s.Has |= schemas.HasConfidence
			fill(r, s.TraceID[:])
			fill(r, s.SpanID[:])
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b schemas.Span) int {
		switch {
		case a.EndUnixNano < b.EndUnixNano:
			return -1
		case a.EndUnixNano > b.EndUnixNano:
			return 1
		}
		return 0
	})
	return out
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// collect is an Emitter that keeps verdicts.
type collect struct{ verdicts []schemas.Verdict }

func (c *collect) Verdict(v schemas.Verdict) { c.verdicts = append(c.verdicts, v) }
func (c *collect) Rollup(schemas.Rollup)     {}

// drive feeds spans (sorted by end time, or shuffled inside each
// evaluation interval) to p as the engine does: every span with event time
// before boundary b, then Evaluate(b), for each boundary from
// startBoundary (0: the one after the first span) until the spans run out.
// With stopAt > 0 it stops after evaluating boundary stopAt and returns the
// index of the next span to feed.
func drive(p *Processor, spans []schemas.Span, from int, startBoundary, stopAt int64, c *collect) int {
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
		fmt.Fprintf(&b, "t=%dm key=%s metric=%s status=%s value=%.4g threshold=%.4g method=%s n=%d",
			(v.WindowEndUnixNano-t0)/int64(time.Minute), v.Key.String(), v.Metric, v.Status, v.Value, v.Threshold, v.Method, v.N)
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

func validateAll(t *testing.T, vs []schemas.Verdict) {
	t.Helper()
	for i := range vs {
		if err := vs[i].Validate(); err != nil {
			t.Fatalf("verdict %d (%s %s): %v", i, vs[i].Key.String(), vs[i].Metric, err)
		}
	}
}
