package scaling

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

// t0 is the start of every generated stream: 2026-01-01T00:00:00Z.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

const minute = int64(time.Minute)

// sink is the test Emitter.
type sink struct{ verdicts []schemas.Verdict }

func (s *sink) Verdict(v schemas.Verdict) { s.verdicts = append(s.verdicts, v) }
func (s *sink) Rollup(schemas.Rollup)     {}

// drive feeds spans (sorted by end time, or shuffled only within slots of
// width every) to p as the engine would: every boundary b in (from, to] is
// evaluated once all spans ending before b have been observed.
func drive(t testing.TB, p processors.Processor, spans []schemas.Span, from, to int64) []schemas.Verdict {
	t.Helper()
	every := int64(p.Interval())
	var out sink
	next := from + every
	for i := range spans {
		s := &spans[i]
		for s.EndUnixNano >= next && next <= to {
			p.Evaluate(next, &out)
			next += every
		}
		p.ObserveSpan(s.Key, s)
	}
	for ; next <= to; next += every {
		p.Evaluate(next, &out)
	}
	for i := range out.verdicts {
		if err := out.verdicts[i].Validate(); err != nil {
			t.Fatalf("verdict %d invalid: %v\n%s", i, err, line(&out.verdicts[i]))
		}
	}
	return out.verdicts
}

// shuffleWithinSlots permutes spans inside each slot of width every,
// keeping slots in order: the arrival orders the engine may produce.
func shuffleWithinSlots(spans []schemas.Span, every int64, r *rand.Rand) []schemas.Span {
	out := slices.Clone(spans)
	for i := 0; i < len(out); {
		j := i
		slot := floorDiv(out[i].EndUnixNano, every)
		for j < len(out) && floorDiv(out[j].EndUnixNano, every) == slot {
			j++
		}
		part := out[i:j]
		r.Shuffle(len(part), func(a, b int) { part[a], part[b] = part[b], part[a] })
		i = j
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// line renders a verdict for golden files and failure messages: numbers
// to 6 significant digits so that the files read well.
func line(v *schemas.Verdict) string {
	var b strings.Builder
	k := v.Key
	fmt.Fprintf(&b, "+%03dm %s/%s/%s/%s %s %s v=%.6g th=%.6g", (v.WindowEndUnixNano-t0)/minute, k.Tenant, k.Service, k.Model, k.Variant, v.Metric, v.Status, v.Value, v.Threshold)
	if v.IntervalLevel != 0 {
		fmt.Fprintf(&b, " ci%.2g=[%.6g,%.6g]", v.IntervalLevel, v.Lower, v.Upper)
	}
	fmt.Fprintf(&b, " n=%d %s", v.N, v.Method)
	for _, d := range v.Details {
		fmt.Fprintf(&b, " %s=%.6g", d.Name, d.Value)
	}
	return b.String()
}

func lines(vs []schemas.Verdict) string {
	var b strings.Builder
	for i := range vs {
		b.WriteString(line(&vs[i]))
		b.WriteByte('\n')
	}
	return b.String()
}

// golden compares got with testdata/golden/name, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
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
		for i := 0; i < min(len(wl), len(gl)); i++ {
			if wl[i] != gl[i] {
				t.Fatalf("%s differs at line %d:\nwant %s\ngot  %s", path, i+1, wl[i], gl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
	}
}

// lognormal draws exp(N(log(median), sigma)).
func lognormal(r *rand.Rand, median, sigma float64) float64 {
	return median * math.Exp(sigma*r.NormFloat64())
}

// newSpan makes a span with fresh random ids ending at end.
func newSpan(r *rand.Rand, key schemas.Key, route string, end int64, durMs float64) schemas.Span {
	var s schemas.Span
	for i := range s.TraceID {
		s.TraceID[i] = byte(r.Uint32())
	}
	for i := range s.SpanID {
		s.SpanID[i] = byte(r.Uint32())
	}
	s.Key = key
	s.Route = route
	s.EndUnixNano = end
	s.StartUnixNano = end - int64(durMs*1e6)
	s.DurationMs = durMs
	return s
}

func sortByEnd(spans []schemas.Span) {
	slices.SortStableFunc(spans, func(a, b schemas.Span) int {
		switch {
		case a.EndUnixNano < b.EndUnixNano:
			return -1
		case a.EndUnixNano > b.EndUnixNano:
			return 1
		}
		return 0
	})
}
