package demo

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/schemas"
)

// VerdictLine is the headless line of a verdict:
//
//	verdict 2026-05-01T12:13:00Z +13m0s tail latency-p999 acme/chat/gpt-4o-mini/baseline breach value=155112 ci=[81234,412345] threshold=15000 method=gpd_mle_profile n=3012 id=...
//
// The offset is event time since start; ci is present when the verdict
// has an interval.
func VerdictLine(v *schemas.Verdict, start time.Time) string {
	var b strings.Builder
	b.WriteString("verdict ")
	writeTime(&b, v.WindowEndUnixNano, start)
	for _, f := range []string{v.Processor, v.SLO, v.Key.String(), string(v.Status)} {
		b.WriteByte(' ')
		b.WriteString(f)
	}
	b.WriteString(" value=")
	b.WriteString(num(v.Value))
	if v.IntervalLevel > 0 {
		b.WriteString(" ci=[" + num(v.Lower) + "," + num(v.Upper) + "]")
	}
	b.WriteString(" threshold=" + num(v.Threshold))
	b.WriteString(" metric=" + v.Metric + " method=" + v.Method + " n=" + strconv.FormatInt(v.N, 10) + " id=" + v.ID)
	return b.String()
}

// CommandLine is the headless line of a fuse command the fuse client
// applied (its signature verified):
//
//	fuse 2026-05-01T12:13:00Z +13m0s acme/chat/gpt-4o-mini/* trip open version=... level=2 key=demo-1a2b3c reason="trip (3 of last 5, k=3): tail/..."
func CommandLine(c *schemas.FuseCommand, start time.Time) string {
	var b strings.Builder
	b.WriteString("fuse ")
	writeTime(&b, c.IssuedAtUnixNano, start)
	b.WriteString(" " + c.Target.String() + " " + string(c.Action) + " " + string(c.State))
	b.WriteString(" version=" + strconv.FormatUint(c.Version, 10) + " level=" + strconv.Itoa(c.Level))
	if c.Fallback != "" {
		b.WriteString(" fallback=" + c.Fallback)
	}
	if c.ThrottleFraction > 0 {
		b.WriteString(" admit=" + num(c.ThrottleFraction))
	}
	key := c.KeyID
	if key == "" {
		key = "(unsigned)"
	}
	b.WriteString(" key=" + key)
	if len(c.Reasons) > 0 {
		b.WriteString(" reason=" + strconv.Quote(c.Reasons[0].Text))
	}
	return b.String()
}

// EffectLine is the headless line of an effect verdict (processors/effect):
// the command it judges, the signal's value before → after, the outcome and
// the evaluations it took:
//
//	effect 2026-05-01T12:19:00Z +19m0s acme/chat/gpt-4o-mini/baseline trip v1866... p999_duration_ms 155112 → 2100 (budget 15000) recovered at evaluation 4 of 10 slo=latency-p999 id=...
func EffectLine(v *schemas.Verdict, start time.Time) string {
	var b strings.Builder
	b.WriteString("effect ")
	writeTime(&b, v.WindowEndUnixNano, start)
	action, outcome, _ := strings.Cut(v.Method, ":")
	d := func(name string) float64 { x, _ := v.Detail(name); return x }
	k, n := strconv.Itoa(int(d("evaluations"))), strconv.Itoa(int(d("max_evaluations")))
	b.WriteString(" " + v.Key.String() + " " + action + " v" + strconv.FormatUint(uint64(d("command_version")), 10))
	b.WriteString(" " + v.Metric + " " + num(d("before")) + " → " + num(d("after")))
	if st := d("after_status"); st >= 2 {
		// The after value of a warn or a breach can sit under the budget
		// (a burn rate's short window): say which it was.
		b.WriteString(" [" + map[bool]string{true: "breach", false: "warn"}[st == 3] + "]")
	}
	b.WriteString(" (budget " + num(v.Threshold) + ") ")
	switch outcome {
	case effect.OutcomeRecovered:
		b.WriteString("recovered at evaluation " + k + " of " + n)
	case effect.OutcomeNotRecovered:
		b.WriteString("not recovered within " + n + " evaluations")
	case effect.OutcomeHeld:
		b.WriteString("held for " + n + " evaluations")
	case effect.OutcomeRelapsed:
		b.WriteString("relapsed at evaluation " + k + " of " + n)
	default:
		b.WriteString(strings.ReplaceAll(outcome, "_", " ") + " after " + k + " of " + n + " evaluations")
	}
	b.WriteString(" slo=" + v.SLO + " id=" + v.ID)
	return b.String()
}

func writeTime(b *strings.Builder, t int64, start time.Time) {
	b.WriteString(time.Unix(0, t).UTC().Format(time.RFC3339))
	b.WriteString(" +")
	b.WriteString(time.Duration(t - start.UnixNano()).String())
}

// num formats a number briefly: integers as such, others with 4
// significant digits.
func num(x float64) string {
	if x == float64(int64(x)) && x < 1e15 && x > -1e15 {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// printer writes the headless lines, which come from several goroutines
// (the engine's sink, the fuse client), buffered until flush.
type printer struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func newPrinter(w io.Writer) *printer { return &printer{w: bufio.NewWriter(w)} }

// line writes s and a newline.
func (p *printer) line(s string) {
	p.mu.Lock()
	p.w.WriteString(s)
	p.w.WriteByte('\n')
	p.mu.Unlock()
}

// flush writes out what is buffered.
func (p *printer) flush() {
	p.mu.Lock()
	p.w.Flush()
	p.mu.Unlock()
}
