package loop

import (
	"fmt"
	"io"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// WriteTable writes the report as a Markdown table: per incident, the
// users' SLO over the incident with and without the loop, over the part
// after the loop's first command, and the failing provider's own (its
// direct traffic) over the incident.
func (r *Result) WriteTable(w io.Writer, budget time.Duration, floor float64) {
	fmt.Fprintf(w, "| incident | command (after start) | users over the incident: P99.9 / errors / compliance, without → with the loop | users after the command, without → with | failing provider, direct; probes: P99.9 / errors / compliance | fusebox's effect verdict on the command |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		cmd := "none"
		if row.Commanded > 0 {
			cmd = fmt.Sprintf("%s at +%.1fs", row.Action, (row.Commanded - row.Incident.Start).Seconds())
			if row.Closed > 0 {
				cmd += fmt.Sprintf(", close at end%+.1fs", (row.Closed - row.Incident.End).Seconds())
			}
		}
		fmt.Fprintf(w, "| %s (%s, %s/%s, %v) | %s | %s → %s | %s → %s | %s; %s | %s |\n",
			row.Incident.Name, row.Incident.Kind, row.Incident.Target.Tenant, row.Incident.Target.Model,
			row.Incident.End-row.Incident.Start, cmd,
			slo(row.Without), slo(row.With), slo(row.WithoutAfter), slo(row.WithAfter), short(row.Direct), short(row.Probes),
			EffectText(row.Effect))
	}
	fmt.Fprintf(w, "\nSLO: a call complies when it answers 200 within %v (for a canary drift, also with a confidence score of at least %.2f); P99.9 is over the successful calls. Calls per cell: %s.\n", budget, floor, counts(r))
}

func slo(s SLO) string {
	if s.Calls == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %.1f%% / %.2f%%", ms(s.P999), 100*s.ErrorRate, 100*s.Compliance)
}

func short(s SLO) string {
	if s.Calls == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %.1f%% / %.2f%% (%d calls)", ms(s.P999), 100*s.ErrorRate, 100*s.Compliance, s.Calls)
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func counts(r *Result) string {
	out := ""
	for i, row := range r.Rows {
		if i > 0 {
			out += "; "
		}
		out += fmt.Sprintf("%s %d (after the command %d)", row.Incident.Name, row.With.Calls, row.WithAfter.Calls)
	}
	return out
}

// EffectText is an effect verdict in a few words: its method (action and
// outcome), the evaluations it took of its maximum, and the signal's
// metric before and after; "none" for nil.
func EffectText(v *schemas.Verdict) string {
	if v == nil {
		return "none"
	}
	d := func(name string) float64 { x, _ := v.Detail(name); return x }
	return fmt.Sprintf("%s after %.0f/%.0f evaluations, %s %.4g → %.4g", v.Method, d("evaluations"), d("max_evaluations"), v.Metric, d("before"), d("after"))
}
