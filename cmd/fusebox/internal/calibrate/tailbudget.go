package calibrate

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"github.com/fusebox-dev/fusebox/schemas"
)

// tailGroup is what a tail SLO of the proposal matches: a service, a model
// and an operation (gen_ai.operation.name, "" for calls without one).
type tailGroup struct{ service, model, operation string }

// windowMax is the largest per-key window estimate of one tail group in
// the recording, and where it was.
type windowMax struct {
	value   float64     // ms: the window's P99.9 as the tail processor decides on it
	key     schemas.Key // the key whose window it is
	end     int64       // the window's end (Unix ns)
	windows int         // windows judged (not insufficient_data)
	// byTenant is every window's value per tenant (the same measure).
	byTenant map[string][]float64
}

// fastTenants are the tenants of a group whose typical window (the
// median of their windows' values) lies more than the margin below the
// slowest tenant's typical window, sorted, with the largest of their
// windows: a budget made for the slowest tenant would let their tails
// grow by that factor unseen, so they get an SLO of their own too. The
// median, not the maximum: the largest of a hundred windows is too noisy
// to tell tenants apart (tenants of one distribution would split). None
// when the group has one tenant or its tenants are within the margin.
func (w windowMax) fastTenants(margin float64) ([]string, float64) {
	med := make(map[string]float64, len(w.byTenant))
	slowest := 0.0
	for tn, xs := range w.byTenant {
		ys := slices.Clone(xs)
		slices.Sort(ys)
		med[tn] = ys[len(ys)/2]
		slowest = math.Max(slowest, med[tn])
	}
	var names []string
	top := 0.0
	for tn, m := range med {
		if m <= slowest/(1+margin) {
			names = append(names, tn)
			top = math.Max(top, slices.Max(w.byTenant[tn]))
		}
	}
	slices.Sort(names)
	return names, top
}

// tailLevel is the tail SLOs' interval level for a false-trip target of
// falseTrips per 1,000 key-days: a = falseTrips / (1,000 x evaluations per
// key-day), rounded down to one significant digit, and level = 1 - 2a, so
// that a key whose P99.9 sits at its budget breaches falsely in at most a
// of its evaluations (the lower bound is one-sided at 1 - a). No credit is
// taken for the breaker's k-of-n: one unusual stretch of calls stays in
// every overlapping window for the window's length, so its breaches come
// together and count as one; a Bonferroni bound over the key-day's
// evaluations is then a bound on its trips. Clamped to [0.95, 1 - 2e-9].
func tailLevel(falseTrips float64) (level, alpha float64) {
	perDay := float64(24*time.Hour) / float64(tailEvery)
	alpha = math.Max(roundDown1(falseTrips/(1000*perDay)), 1e-9)
	alpha = math.Min(alpha, (1-tail.DefaultLevel)/2)
	return 1 - 2*alpha, alpha
}

// probeTail replays in through one tail SLO per group at the processor's
// defaults (at the proposed level) with a budget every window exceeds:
// every judged window then carries its P99.9 estimate, its lower bound
// and, by the one-call rule, its estimate without its largest value
// (detail without_largest). A window stays ok under a budget at or above
// its estimate, or at or above the refit when the rule applies to it, so
// the largest such value over the keys and windows is the budget's floor:
// below it some key of the recording would warn or breach.
func probeTail(in *Input, groups []tailGroup, level float64) ([]windowMax, error) {
	var y strings.Builder
	y.WriteString("version: calibrate-tail-probe\nkeys:\n  dimensions: [tenant, service, model, variant]\nslos:\n")
	for i, g := range groups {
		match := fmt.Sprintf("service: [%s], model: [%s]", yamlStr(g.service), yamlStr(g.model))
		if g.operation != "" {
			match += fmt.Sprintf(", operation: [%s]", yamlStr(g.operation))
		}
		fmt.Fprintf(&y, "  - name: probe-%d\n    match: {%s}\n    tail: {metric: duration_ms, include_errors: false, p: 0.999, budget: 1e-9, level: %s}\n", i, match, fmtLevel(level))
	}
	y.WriteString("breaker: {rules: []}\n")
	wc, _, err := replay.ParseWorkerConfig("tail-probe.yaml", []byte(y.String()))
	if err != nil {
		return nil, fmt.Errorf("calibrate: tail probe: %w", err)
	}
	out := make([]windowMax, len(groups))
	idx := make(map[string]int, len(groups))
	for i := range groups {
		idx[fmt.Sprintf("probe-%d", i)] = i
	}
	_, err = replay.StreamBatches(wc, batches(in), func(o schemas.Output) {
		for i := range o.Verdicts {
			v := &o.Verdicts[i]
			j, ok := idx[v.SLO]
			if !ok || v.Processor != tail.Name || v.Status == schemas.StatusInsufficientData {
				continue
			}
			// The window is ok under a budget B when its estimate is at most
			// B, or when the one-call rule applies: the estimate without
			// its largest value is at most B and below the window's lower
			// bound (at the proposed level).
			x := v.Value
			if w, ok := v.Detail(tail.DetailWithoutLargest); ok && w < v.Lower {
				x = math.Min(x, w)
			}
			m := &out[j]
			if m.byTenant == nil {
				m.byTenant = map[string][]float64{}
			}
			m.byTenant[v.Key.Tenant] = append(m.byTenant[v.Key.Tenant], x)
			m.windows++
			if x > m.value {
				m.value, m.key, m.end = x, v.Key, v.WindowEndUnixNano
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("calibrate: tail probe: %w", err)
	}
	return out, nil
}
