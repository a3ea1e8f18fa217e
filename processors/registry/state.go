package registry

import (
	"slices"

	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
)

// windowShape is every kind's StateShape: the parameters that shape what
// its windows hold — the metric, whether failed calls count (include_errors), window lengths, the evaluation interval
// (the slot size), sample caps, canary and baseline variants, scopes and
// mixes, the burn-rate windows and the latency threshold that makes an
// event bad. Parameters that only judge what the windows hold (budgets,
// p, alpha, limits, factors, minimum counts, streak lengths) are left
// out: editing them keeps the state. nil for a Config of no kind.
func windowShape(cfg Config) any {
	switch c := cfg.(type) {
	case *tail.Config:
		return []any{c.Metric, c.IncludeErrors, c.Window, c.Every, c.MaxSamplesPerSlot}
	case *drift.Config:
		return []any{c.Metric, c.IncludeErrors, c.Mode, c.Window, c.Every, c.ReferenceWindow, c.CanaryVariant, c.BaselineVariant, c.MaxSamplesPerSlot}
	case *decay.Config:
		return []any{c.Metric, c.Window, c.Every, c.MaxSamplesPerSlot}
	case *scaling.Config:
		return []any{c.Scope, c.Mix, c.Window, c.Every, c.MaxSamplesPerSlot, c.MaxCategories}
	case *corrections.Config:
		return []any{c.JoinWindow, c.Window, c.Every, c.CanaryVariant, c.BaselineVariant,
			c.MaxIndexedSpans, c.MaxPendingCorrections, c.MaxUnjoinedKeys}
	case *burnrate.Config:
		var windows []any
		for _, r := range slices.Concat(c.Page, c.Ticket) {
			windows = append(windows, r.Long, r.Short)
		}
		if c.Method != burnrate.MethodMultiwindow {
			// The CUSUM statistic is state too; the default shape (and so
			// every existing StateID) is unchanged.
			return []any{c.LatencyThresholdMs, c.Every, windows, c.Method}
		}
		return []any{c.LatencyThresholdMs, c.Every, windows}
	}
	return nil
}
