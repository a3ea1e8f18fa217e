package demo

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// ANSI escape codes: the view needs nothing else from the terminal.
const (
	ansiReset   = "\x1b[0m"
	ansiBold    = "\x1b[1m"
	ansiDim     = "\x1b[2m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiCyan    = "\x1b[36m"
	ansiHome    = "\x1b[H"
	ansiEOL     = "\x1b[K" // clear to the end of the line
	ansiEOS     = "\x1b[J" // clear to the end of the screen
	ansiAltOn   = "\x1b[?1049h\x1b[?25l"
	ansiAltOff  = "\x1b[?25h\x1b[?1049l"
	maxReasonCh = 70
)

// header is what the view shows above the table.
type header struct {
	wall       time.Duration // since the demo started
	eventNow   time.Time     // event time the generator reached
	duration   time.Duration // the scenario's event-time length
	speedup    float64
	spansPerS  float64
	jsonl      string
	clickhouse string
	keyID      string
	page       string // the live page's URL, "" when off
	finished   bool
}

// rowData is one row's numbers, from the latest verdicts of its keys.
type rowData struct {
	tail, drift, decay, corr, mix, burn *schemas.Verdict
}

// pick keeps v in *slot when better says it should replace the current
// one (insufficient_data never replaces a judged verdict).
func pick(slot **schemas.Verdict, v *schemas.Verdict, better func(a, b *schemas.Verdict) bool) {
	cur := *slot
	switch {
	case cur == nil:
		*slot = v
	case v.Status == schemas.StatusInsufficientData:
	case cur.Status == schemas.StatusInsufficientData || better(v, cur):
		*slot = v
	}
}

func higher(a, b *schemas.Verdict) bool { return a.Value > b.Value }
func lower(a, b *schemas.Verdict) bool  { return a.Value < b.Value }

// render draws the whole view into b, each line ended by "clear to end of
// line", so that redrawing over the previous frame leaves no debris.
func (s *state) render(b *strings.Builder, h header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := func(format string, args ...any) {
		fmt.Fprintf(b, format, args...)
		b.WriteString(ansiEOL + "\n")
	}
	b.WriteString(ansiHome)
	status := "running"
	if h.finished {
		status = ansiGreen + "scenario finished" + ansiReset + " — Ctrl-C to exit"
	}
	line("%sfusebox demo%s · event time %s (+%v of %v) · speedup %g× · %.0f spans/s · wall %v · %s",
		ansiBold, ansiReset, h.eventNow.UTC().Format("15:04:05"), h.eventNow.Sub(s.start).Round(time.Second), h.duration,
		h.speedup, h.spansPerS, h.wall.Round(time.Second), status)
	out := "verdicts and commands → " + h.jsonl
	if h.clickhouse != "" {
		out += " and ClickHouse " + h.clickhouse
	}
	line("%s%s · %d verdicts · %d commands verified with key %s%s", ansiDim, out, s.verdicts, s.applied, h.keyID, ansiReset)
	if h.page != "" {
		line("%slive page: %s%s", ansiDim, h.page, ansiReset)
	}
	line("")

	rows := map[rowKey]*rowData{}
	mixes := map[[2]string]*schemas.Verdict{}
	for _, r := range s.sortedRows() {
		rows[r] = &rowData{}
	}
	for sk := range s.latest {
		v := s.latest[sk]
		vp := &v
		if sk.processor == "scaling" {
			pick2 := mixes[[2]string{v.Key.Tenant, v.Key.Service}]
			pick(&pick2, vp, higher)
			mixes[[2]string{v.Key.Tenant, v.Key.Service}] = pick2
			continue
		}
		rd := rows[rowKey{v.Key.Tenant, v.Key.Service, v.Key.Model}]
		if rd == nil {
			continue
		}
		switch {
		case sk.processor == "tail":
			pick(&rd.tail, vp, higher)
		case sk.processor == "drift":
			pick(&rd.drift, vp, func(a, b *schemas.Verdict) bool { return pValue(a) < pValue(b) })
		case sk.processor == "decay":
			pick(&rd.decay, vp, lower)
		case sk.processor == "corrections" && sk.metric == "correction_rate":
			pick(&rd.corr, vp, higher)
		case sk.processor == "burnrate":
			pick(&rd.burn, vp, higher)
		}
	}
	line("%s%-32s %-22s %-30s %-9s %-9s %-18s %-6s %-6s%s", ansiBold,
		"tenant/service/model", "breaker", "P99.9 latency [95% CI] / budget", "drift p", "decay Δ", "corrections", "mix H", "burn", ansiReset)
	for _, r := range s.sortedRows() {
		rd := rows[r]
		rd.mix = mixes[[2]string{r.tenant, r.service}]
		name := r.tenant + "/" + r.service + "/" + r.model
		line("%-32s %s %s %s %s %s %s %s", name, s.breakerCell(r, 22),
			cell(rd.tail, 30, func(v *schemas.Verdict) string {
				return fmt.Sprintf("%s [%s–%s] / %s", secs(v.Value), secs(v.Lower), secs(v.Upper), secs(v.Threshold))
			}),
			cell(rd.drift, 9, func(v *schemas.Verdict) string { return pText(pValue(v)) }),
			cell(rd.decay, 9, func(v *schemas.Verdict) string { return fmt.Sprintf("%+.3f", v.Value) }),
			cell(rd.corr, 18, func(v *schemas.Verdict) string {
				return fmt.Sprintf("%.1f%% [%.1f–%.1f]", 100*v.Value, 100*v.Lower, 100*v.Upper)
			}),
			cell(rd.mix, 6, func(v *schemas.Verdict) string { return fmt.Sprintf("%.2f", v.Value) }),
			cell(rd.burn, 6, func(v *schemas.Verdict) string { return fmt.Sprintf("%.1f×", v.Value) }),
		)
	}
	line("")
	line("%sfuse commands, as a gateway applies them (signature verified):%s", ansiBold, ansiReset)
	for i := 0; i < maxEvents; i++ {
		if i >= len(s.events) {
			line("")
			continue
		}
		e := s.events[i]
		c := &e.cmd
		reason := viewReason(c, maxReasonCh)
		line("  +%-8v %-36s %s %s", time.Duration(c.IssuedAtUnixNano-s.start.UnixNano()).Round(time.Second),
			c.Target.String(), colour(stateColour(c.State), fmt.Sprintf("%-10s %-10s", c.Action, c.State)), ansiDim+reason+ansiReset)
	}
	line("")
	line("%sincidents (scripted in the scenario):%s", ansiBold, ansiReset)
	for i, inc := range s.incs {
		mark, how := ansiDim+"[ ]"+ansiReset, "waiting"
		switch {
		case s.closed[i] > 0:
			mark = ansiGreen + "[✓]" + ansiReset
			how = fmt.Sprintf("tripped after %v, recovered after %v (wall)", s.tripped[i].Round(time.Second), s.closed[i].Round(time.Second))
		case s.tripped[i] > 0:
			mark = ansiRed + "[!]" + ansiReset
			how = fmt.Sprintf("tripped after %v (wall)", s.tripped[i].Round(time.Second))
		}
		line("  %s %-18s %-7s %-36s %-20s %s", mark, inc.Name, "+"+inc.Start.String(), inc.Target.String(), inc.Processor+"→"+string(inc.Action), how)
	}
	if s.allDone > 0 {
		line("  %severy incident tripped and recovered within %v of wall time%s", ansiGreen, s.allDone.Round(time.Second), ansiReset)
	}
	if n := len(s.elsewhere); n > 0 {
		line("  %s%d trip(s) outside the incidents%s", ansiRed, n, ansiReset)
	}
	b.WriteString(ansiEOS)
}

// breakerCell is the most severe command in effect for the row's keys.
func (s *state) breakerCell(r rowKey, width int) string {
	var best *schemas.FuseCommand
	for t := range s.fuse {
		c := s.fuse[t]
		if c.State == schemas.StateClosed || !covers(t, r) {
			continue
		}
		if best == nil || severity(&c) > severity(best) {
			cc := c
			best = &cc
		}
	}
	if best == nil {
		return colour(ansiGreen, pad("closed", width))
	}
	label := "OPEN "
	if best.State == schemas.StateHalfOpen {
		label = "HALF-OPEN "
	}
	label += string(best.Action)
	if best.Target.Variant != schemas.Wildcard {
		label += " (" + best.Target.Variant + ")"
	}
	return colour(stateColour(best.State), pad(label, width))
}

func severity(c *schemas.FuseCommand) int {
	s := c.Level
	if c.State == schemas.StateOpen {
		s += 10
	}
	return s
}

func stateColour(st schemas.BreakerState) string {
	switch st {
	case schemas.StateOpen:
		return ansiRed
	case schemas.StateHalfOpen:
		return ansiYellow
	}
	return ansiGreen
}

// cell formats a verdict's numbers padded to width and coloured by its
// status; "—" when there is no judged verdict.
func cell(v *schemas.Verdict, width int, text func(*schemas.Verdict) string) string {
	if v == nil || v.Status == schemas.StatusInsufficientData {
		return colour(ansiDim, pad("—", width))
	}
	c := ""
	switch v.Status {
	case schemas.StatusBreach:
		c = ansiRed + ansiBold
	case schemas.StatusWarn:
		c = ansiYellow
	}
	return colour(c, pad(text(v), width))
}

func colour(c, s string) string {
	if c == "" {
		return s
	}
	return c + s + ansiReset
}

// pad pads s with spaces to width runes (or cuts it).
func pad(s string, width int) string {
	r := []rune(s)
	if len(r) >= width {
		return string(r[:width])
	}
	return s + strings.Repeat(" ", width-len(r))
}

// secs formats milliseconds as seconds.
func secs(ms float64) string {
	if ms >= 100_000 {
		return fmt.Sprintf("%.0fs", ms/1000)
	}
	return fmt.Sprintf("%.1fs", ms/1000)
}

// pText formats a p-value with two significant digits, tiny ones as a
// bound.
func pText(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.2g", p)
}

func pValue(v *schemas.Verdict) float64 {
	if p, ok := v.Detail("p_value"); ok {
		return p
	}
	return math.Inf(1)
}

// viewReason is the reason of c that matters, for one line of at most
// max runes: the latest cited verdict (the breach that tripped, or the
// last healthy evaluation of the tripping SLO), with the "half-open after
// ..." and "refresh of ..." prefixes reduced to one word, and the part
// from "value=" on (the value that tripped and its budget) never cut:
// when the line is too long the description before it is shortened.
func viewReason(c *schemas.FuseCommand, max int) string {
	if len(c.Reasons) == 0 {
		return ""
	}
	text := c.Reasons[len(c.Reasons)-1].Text
	label := ""
	if strings.HasPrefix(text, "refresh of the ") {
		label = "refresh: "
	}
	// Drop the chain of prefixes ("refresh of ...: ", "half-open after
	// ...; ") down to the verdict's own text.
	for {
		if i := strings.Index(text, "): "); strings.HasPrefix(text, "refresh of the ") && i >= 0 {
			text = text[i+3:]
			continue
		}
		if i := strings.Index(text, "; "); strings.HasPrefix(text, "half-open after ") && i >= 0 {
			if label == "" {
				label = "half-open: "
			}
			text = text[i+2:]
			continue
		}
		break
	}
	if i := strings.Index(text, ", window "); i >= 0 {
		text = text[:i] // the window is in the time column already
	}
	text = label + text
	r := []rune(text)
	if len(r) <= max {
		return text
	}
	v := strings.Index(text, "value=")
	if v < 0 {
		return string(r[:max-1]) + "…"
	}
	head, tail := []rune(text[:v]), []rune(text[v:])
	keep := max - len(tail) - 1
	if keep < 0 {
		return string(tail) // the value and budget, whole, even past max
	}
	return string(head[:min(keep, len(head))]) + "…" + string(tail)
}
