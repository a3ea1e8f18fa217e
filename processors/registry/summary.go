package registry

import (
	"fmt"
	"strings"

	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
)

// The one-line summaries of `fusebox config check`.

func tailSummary(c *tail.Config) string {
	return fmt.Sprintf("tail %s budget %g (breach when the 95%% interval's lower bound exceeds it) over %v every %v",
		tail.MetricName(c.P, c.Metric), c.Budget, c.Window, c.Every)
}

func driftSummary(c *drift.Config) string {
	against := "the previous " + c.ReferenceWindow.String()
	if c.Mode == drift.ModeCanary {
		against = "variant " + c.BaselineVariant + " (canary " + c.CanaryVariant + ")"
	}
	return fmt.Sprintf("drift %s: KS p < %g and D >= %g, %d in a row, %v window against %s, every %v",
		drift.MetricName(*c), c.Alpha, c.MinEffect, c.Consecutive, c.Window, against, c.Every)
}

func decaySummary(c *decay.Config) string {
	return fmt.Sprintf("decay of %s: decline over %v below %g (OLS slope, alpha %g) every %v", c.Metric, c.Window, c.Limit, c.Alpha, c.Every)
}

func scalingSummary(c *scaling.Config) string {
	return fmt.Sprintf("scaling per [%s]: entropy of [%s] >= %g with latency sd > %gms scales out; window %v every %v",
		strings.Join(c.Scope, " "), strings.Join(c.Mix, " "), c.EntropyHigh, c.StdDevBudgetMs, c.Window, c.Every)
}

func correctionsSummary(c *corrections.Config) string {
	return fmt.Sprintf("corrections: rate <= %g (Wilson lower bound) over %v every %v, joined within %v; canary vs baseline at alpha %g",
		c.MaxRate, c.Window, c.Every, c.JoinWindow, c.Alpha)
}

func burnrateSummary(c *burnrate.Config) string {
	return fmt.Sprintf("burnrate: target %g; page %s; ticket %s; every %v", c.Target, burnRules(c.Page), burnRules(c.Ticket), c.Every)
}

func burnRules(rs []burnrate.Rule) string {
	if len(rs) == 0 {
		return "none"
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%g× over %v and %v", r.Factor, r.Long, r.Short))
	}
	return strings.Join(out, ", ")
}
