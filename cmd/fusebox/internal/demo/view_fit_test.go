package demo

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fusebox-dev/fusebox/schemas"
)

var csi = regexp.MustCompile("\x1b\\[[0-9;?]*[@-~]")

// visible is the number of cells a line takes on the terminal.
func visible(s string) int { return utf8.RuneCountInString(csi.ReplaceAllString(s, "")) }

// viewState is a state holding verdicts of every column for two models
// and more fuse commands than fit a short terminal.
func viewState(t *testing.T) *state {
	t.Helper()
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := newState(start, Incidents())
	end := start.Add(10 * time.Minute).UnixNano()
	var vs []schemas.Verdict
	for _, m := range []string{"gpt-4o-mini", "llama-3-70b"} {
		k := schemas.Key{Tenant: "acme", Service: "chat", Model: m, Variant: "baseline"}
		vs = append(vs,
			schemas.Verdict{Processor: "tail", Metric: "p999_duration_ms", Key: k, Status: schemas.StatusWarn, Value: 812, Lower: 700, Upper: 950, Threshold: 1500, IntervalLevel: 0.95, WindowEndUnixNano: end},
			schemas.Verdict{Processor: "drift", Metric: "confidence", Key: k, Status: schemas.StatusOK, Value: 0.1, Threshold: 0.05, WindowEndUnixNano: end,
				Details: []schemas.Detail{{Name: "p_value", Value: 0.003}, {Name: "alpha", Value: 0.01}}},
			schemas.Verdict{Processor: "decay", Metric: "alignment", Key: k, Status: schemas.StatusOK, Value: -0.05, Threshold: -0.12, WindowEndUnixNano: end},
			schemas.Verdict{Processor: "corrections", Metric: "correction_rate", Key: k, Status: schemas.StatusOK, Value: 0.021, Lower: 0.015, Upper: 0.029, Threshold: 0.05, WindowEndUnixNano: end},
			schemas.Verdict{Processor: "burnrate", Metric: "burn_rate", Key: k, Status: schemas.StatusBreach, Value: 16.2, Threshold: 14.4, WindowEndUnixNano: end},
		)
	}
	vs = append(vs, schemas.Verdict{Processor: "scaling", Metric: "entropy", Key: schemas.Key{Tenant: "acme", Service: "chat", Model: "*", Variant: "*"},
		Status: schemas.StatusOK, Value: 0.85, Threshold: 0.8, WindowEndUnixNano: end})
	st.observe(schemas.Output{Verdicts: vs})
	for i := range 10 {
		st.command(schemas.FuseCommand{}, schemas.FuseCommand{Target: schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: "*"},
			Action: schemas.ActionTrip, State: schemas.StateOpen, Version: uint64(i + 1), IssuedAtUnixNano: start.Add(time.Duration(i) * time.Minute).UnixNano(),
			Reasons: []schemas.Reason{{Text: fmt.Sprintf("trip %d: tail breach value=1900 budget=1500", i)}}})
	}
	return st
}

// TestViewCarriesUnitsAndThresholds: every column shows its value with its
// unit and the threshold it is judged against.
func TestViewCarriesUnitsAndThresholds(t *testing.T) {
	var b strings.Builder
	viewState(t).render(&b, header{width: 400})
	out := csi.ReplaceAllString(b.String(), "")
	for _, want := range []string{
		"P99.9 latency [95% CI] / budget", "812 ms [700–950] / 1500 ms",
		"drift p / alpha", "0.003 / 0.01",
		"decay Δ / limit", "-0.050 / -0.12",
		"corrections [95% CI] / max", "2.1% [1.5–2.9] / 5%",
		"mix H / high", "0.85 / 0.80",
		"burn / factor", "16.2× / 14.4×",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the view lacks %q:\n%s", want, out)
		}
	}
}

// TestViewFitsTheTerminal: at any width no line is wider than the
// terminal (a wider line wraps and scrolls the redrawn frame), columns
// that do not fit are left out and counted, and at a short height fewer
// fuse commands are listed (the latest) so the frame fits, and a terminal
// shorter than the rest loses the bottom lines, saying so.
func TestViewFitsTheTerminal(t *testing.T) {
	st := viewState(t)
	for _, w := range []int{60, 80, 100, 120, 160, 240} {
		for _, h := range []int{0, 10, 24, 40} {
			var b strings.Builder
			st.render(&b, header{width: w, height: h, eventNow: st.start.Add(10 * time.Minute)})
			lines := strings.Split(strings.TrimSuffix(b.String(), ansiEOS), "\n")
			if lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			for _, l := range lines {
				if n := visible(l); n > w {
					t.Errorf("width %d: a line of %d cells: %q", w, n, csi.ReplaceAllString(l, ""))
				}
			}
			// height-1 at most: a newline on the last row scrolls.
			if h > 0 && len(lines) > h-1 {
				t.Errorf("width %d height %d: %d lines", w, h, len(lines))
			}
			plain := csi.ReplaceAllString(b.String(), "")
			if w < 160 && !strings.Contains(plain, "left out: widen the terminal to") {
				t.Errorf("width %d: no note of the columns left out", w)
			}
			if h == 10 && w >= 80 && !strings.Contains(plain, "left out: enlarge the terminal to") {
				t.Errorf("height 10: the cut is not said:\n%s", plain)
			}
			if h == 24 && (!strings.Contains(plain, "+9m0s ") || strings.Contains(plain, "+0s ")) {
				t.Errorf("height 24: the latest command is not listed:\n%s", plain)
			}
		}
	}
}
