package demo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	// width and height are the terminal's size in cells; 0: unknown (the
	// view is drawn whole, defaultWidth wide).
	width, height int
}

// defaultWidth is the view's width when the terminal's is unknown.
const defaultWidth = 160

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

// column is one column of the view's table: its heading (with the unit
// and the threshold it is compared with), width in cells, and cell.
type column struct {
	head  string
	width int
	cell  func(rd *rowData) string
}

// columns are the table's columns after the row name and the breaker, in
// the order they are dropped from the right when the terminal is narrow.
// Every cell shows the value with its unit and the threshold it is judged
// against ("812 ms [700–950] / 1500 ms": P99.9 with its 95% interval,
// against the budget).
var columns = []column{
	{"P99.9 latency [95% CI] / budget", 34, func(rd *rowData) string {
		return cell(rd.tail, 34, func(v *schemas.Verdict) string {
			return fmt.Sprintf("%s [%s–%s] / %s", msUnit(v.Value), msBare(v.Lower), msBare(v.Upper), msUnit(v.Threshold))
		})
	}},
	{"drift p / alpha", 16, func(rd *rowData) string {
		return cell(rd.drift, 16, func(v *schemas.Verdict) string {
			a, ok := v.Detail("alpha")
			if !ok {
				return pText(pValue(v))
			}
			return pText(pValue(v)) + " / " + strconv.FormatFloat(a, 'g', 3, 64)
		})
	}},
	{"decay Δ / limit", 15, func(rd *rowData) string {
		return cell(rd.decay, 15, func(v *schemas.Verdict) string { return fmt.Sprintf("%+.3f / %+.2f", v.Value, v.Threshold) })
	}},
	{"corrections [95% CI] / max", 26, func(rd *rowData) string {
		return cell(rd.corr, 26, func(v *schemas.Verdict) string {
			return fmt.Sprintf("%.1f%% [%.1f–%.1f] / %s%%", 100*v.Value, 100*v.Lower, 100*v.Upper, strconv.FormatFloat(100*v.Threshold, 'g', 3, 64))
		})
	}},
	{"mix H / high", 12, func(rd *rowData) string {
		return cell(rd.mix, 12, func(v *schemas.Verdict) string { return fmt.Sprintf("%.2f / %.2f", v.Value, v.Threshold) })
	}},
	{"burn / factor", 13, func(rd *rowData) string {
		return cell(rd.burn, 13, func(v *schemas.Verdict) string { return fmt.Sprintf("%.1f× / %g×", v.Value, v.Threshold) })
	}},
}

// Widths of the row name and breaker columns, always shown.
const (
	nameWidth    = 32
	breakerWidth = 22
)

// fixedLines is how many lines of the view are not fuse commands, with
// rows table rows and incs incidents: the header (3), the table heading,
// the blank and title before the commands, the blank and title before the
// incidents, and the two possible closing lines.
func fixedLines(rows, incs int) int { return 3 + 1 + rows + 2 + 2 + incs + 2 }

// render draws the whole view into b, each line ended by "clear to end of
// line", so that redrawing over the previous frame leaves no debris. It
// fits h.width: table columns that do not fit are left out (a line says
// how many), other lines are cut; and h.height (at most height-1 lines):
// fewer fuse commands are listed, the latest, and on a terminal shorter
// than the table the bottom is cut (a line says so).
func (s *state) render(b *strings.Builder, h header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	width := h.width
	if width <= 0 {
		width = defaultWidth
	}
	var lines []string
	line := func(format string, args ...any) {
		lines = append(lines, cutVisible(fmt.Sprintf(format, args...), width))
	}
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
	// As many table columns as fit, from the left; the line under the
	// header says how many are left out and the width that shows them.
	shown, used, all := 0, nameWidth+1+breakerWidth, nameWidth+1+breakerWidth
	for _, c := range columns {
		all += 1 + c.width
	}
	for _, c := range columns {
		if used+1+c.width > width {
			break
		}
		used += 1 + c.width
		shown++
	}
	if hidden := len(columns) - shown; hidden > 0 {
		line("%s(%d column(s) left out: widen the terminal to %d)%s", ansiDim, hidden, all, ansiReset)
	} else {
		line("")
	}

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
	var head strings.Builder
	fmt.Fprintf(&head, "%s%-*s %-*s", ansiBold, nameWidth, "tenant/service/model", breakerWidth, "breaker")
	for _, c := range columns[:shown] {
		fmt.Fprintf(&head, " %-*s", c.width, c.head)
	}
	head.WriteString(ansiReset)
	line("%s", head.String())
	sorted := s.sortedRows()
	for _, r := range sorted {
		rd := rows[r]
		rd.mix = mixes[[2]string{r.tenant, r.service}]
		var row strings.Builder
		fmt.Fprintf(&row, "%-*s %s", nameWidth, pad(r.tenant+"/"+r.service+"/"+r.model, nameWidth), s.breakerCell(r, breakerWidth))
		for _, c := range columns[:shown] {
			row.WriteString(" " + c.cell(rd))
		}
		line("%s", row.String())
	}
	events := maxEvents
	if h.height > 0 {
		fixed := fixedLines(len(sorted), len(s.incs))
		if h.page != "" {
			fixed++ // the live page's line under the header
		}
		events = max(1, min(maxEvents, h.height-1-fixed))
	}
	line("")
	line("%sfuse commands, as a gateway applies them (signature verified):%s", ansiBold, ansiReset)
	first := max(0, len(s.events)-events) // the latest that fit
	for i := first; i < first+events; i++ {
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
	line("%seffect of each command (did the SLO that caused it recover?):%s", ansiBold, ansiReset)
	for i := 0; i < maxEffects; i++ {
		if i >= len(s.effects) {
			line("")
			continue
		}
		v := &s.effects[i]
		c := ansiDim
		switch v.Status {
		case schemas.StatusOK:
			c = ansiGreen
		case schemas.StatusBreach:
			c = ansiRed
		}
		// The headless line without its timestamp and id.
		l := EffectLine(v, s.start)
		l = l[strings.Index(l, " +")+1:]
		l = l[:strings.LastIndex(l, " id=")]
		line("  %s%s%s", c, l, ansiReset)
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
	// At most height-1 lines: a newline on the last row would scroll the
	// frame. What does not fit (a terminal shorter than the table) is
	// cut from the bottom, and said.
	if h.height > 1 && len(lines) > h.height-1 {
		n := len(lines) - (h.height - 2)
		lines = append(lines[:h.height-2], cutVisible(fmt.Sprintf("%s(%d more line(s) left out: enlarge the terminal to %d lines)%s",
			ansiDim, n, len(lines)+1, ansiReset), width))
	}
	b.WriteString(ansiHome)
	for _, l := range lines {
		b.WriteString(l + ansiEOL + "\n")
	}
	b.WriteString(ansiEOS)
}

// cutVisible cuts s to at most width visible cells (runes; ANSI escape
// sequences take none and are kept), ending with a reset when it cut
// inside a coloured part. A line as wide as the terminal would wrap and
// scroll the redrawn frame.
func cutVisible(s string, width int) string {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b { // CSI: ESC [ parameters final-byte
			j := i + 1
			if j < len(s) && s[j] == '[' {
				j++
				for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
					j++
				}
			}
			i = j + 1
			continue
		}
		if n == width {
			return s[:i] + ansiReset
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return s
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

// msUnit formats milliseconds with their unit: "812 ms", "15.0 s" from
// 10 s on, "155 s" from 100 s on.
func msUnit(ms float64) string {
	switch {
	case ms >= 100_000:
		return fmt.Sprintf("%.0f s", ms/1000)
	case ms >= 10_000:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// msBare is msUnit without the unit when it is ms (inside an interval
// whose unit follows).
func msBare(ms float64) string { return strings.TrimSuffix(msUnit(ms), " ms") }

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
