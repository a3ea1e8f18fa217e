package calibrate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// Config configures Propose. Zero fields take defaults.
type Config struct {
	// Margin is added to the upper end of each P99.9's 95% interval to make
	// its budget: budget = upper * (1 + Margin), rounded up to two
	// significant digits. Default 0.25.
	Margin float64
	// FalseTrips is the false-trip target per 1,000 key-days the
	// per-evaluation significance levels are derived from. Default 1.
	FalseTrips float64
	// ErrorHeadroom: the burn-rate objective leaves this many times the
	// observed error ratio as the error budget, so normal traffic burns at
	// 1/ErrorHeadroom. Default 4.
	ErrorHeadroom float64
}

func (c *Config) defaults() {
	if c.Margin == 0 {
		c.Margin = 0.25
	}
	if c.FalseTrips == 0 {
		c.FalseTrips = 1
	}
	if c.ErrorHeadroom == 0 {
		c.ErrorHeadroom = 4
	}
}

// ErrNoTraffic is returned by Propose when the input holds no LLM-call span.
var ErrNoTraffic = errors.New("calibrate: no LLM-call spans in the input")

// Proposal is a proposed SLO file and the numbers behind it.
type Proposal struct {
	YAML     string   // the SLO file
	Duration float64  // seconds of event time the input covers
	Notes    []string // how each number was derived, one line each
	// NoAction names each proposed SLO that no breaker rule acts on, and
	// why, one line each (`fusebox calibrate` prints them on stderr): a
	// user who follows the proposal must know what is detected but never
	// commanded.
	NoAction []string
}

// Processor windows and cadences the proposal uses (the processors'
// defaults), for evaluations per key-day and the breaker's cool-down.
const (
	tailWindow, tailEvery               = 10 * time.Minute, time.Minute
	driftWindow, driftEvery             = 5 * time.Minute, time.Minute
	decayWindow, decayEvery             = time.Hour, 5 * time.Minute
	correctionsWindow, correctionsEvery = 10 * time.Minute, time.Minute
)

// Propose derives an SLO file from in (sorted by Sort):
//
//   - tail, one SLO per (service, model, operation) — match.operation
//     is gen_ai.operation.name, left out for calls without one: budget = upper end of the 95%
//     interval of the P99.9 of the successful calls' duration_ms over the
//     whole input, times 1+Margin, rounded up (a window's interval lies
//     above it only when the tail really moved); min_samples the default.
//   - burnrate: objective 1 - ErrorHeadroom x the observed error ratio
//     (rounded to 1, 2 or 5 x a power of ten, at most 0.999), so normal
//     traffic burns at about 1/ErrorHeadroom of the budget.
//   - drift (canary vs baseline confidence when the input has canaries,
//     else the reference mode): false_alarms = FalseTrips / 1000 per
//     key-day, which the processor splits over its detectors and turns
//     into each one's level (the KS test's alpha = false_alarms /
//     (detectors x 1,440 evaluations per key-day), a Bonferroni bound
//     with no credit for a k-in-a-row rule; cusum's and slice's
//     thresholds from their share); consecutive and min_effect are left
//     to the mode's defaults (1 and 0 in reference mode, 3 and 0.1 in
//     canary mode).
//   - decay (alignment) and corrections: the per-evaluation alpha is
//     FalseTrips / (1000 x evaluations per key-day) — a Bonferroni bound
//     over a key's day — at least 1e-6 and at most the processor's
//     default (decay 0.01; corrections 1e-7, below the bound at the
//     default target: its canary z-test is anti-conservative that far in
//     the tail, and the default is what the false-trip study measured to
//     hold); min_samples
//     (min_responses) of these and of drift the larger of the default and
//     a tenth of the median key's count per window, so keys with a tenth
//     of typical traffic are insufficient_data rather than noisy (canary
//     drift: at least 20 and a third of the median canary key's count,
//     the canary side being small by design).
//   - scaling (verdicts only, no breaker rule: scale-out is an action to
//     wire deliberately): the recording replayed through the scaling
//     processor at its defaults gives every window's latency standard
//     deviation and normalised mix entropy per scope key (tenant,
//     service); stddev_budget_ms = the largest clean window's standard
//     deviation × (1 + Margin), rounded up, so no clean window is "high";
//     entropy_high and entropy_low stay at their defaults (0.8, 0.5) and
//     the observed range is noted; min_samples the larger of 50 and a
//     tenth of the median scope key's calls per window.
//   - breaker: a rule per SLO kind, cool_down the longest window a rule
//     waits on (no shorter than 5m). Decay and the corrections' model-level
//     rate (correction_rate) get a degrade to the model with the most calls
//     in the recording, their SLO split in two: one matching every other
//     model (degrade to it), one matching that model itself (trip: a
//     degrade to itself would change nothing); with one model only, a
//     trip.
func Propose(in *Input, cfg Config) (Proposal, error) {
	cfg.defaults()
	if len(in.Spans) == 0 {
		return Proposal{}, ErrNoTraffic
	}
	first, last := in.span()
	dur := max(float64(last-first)/1e9, 1)
	p := Proposal{Duration: dur}
	var y strings.Builder
	note := func(format string, args ...any) { p.Notes = append(p.Notes, fmt.Sprintf(format, args...)) }
	fmt.Fprintf(&y, "# Proposed by `fusebox calibrate` from %s of traffic (%d spans, %d corrections).\n", fmtDur(dur), len(in.Spans), len(in.Corrections))
	fmt.Fprintf(&y, "# Margin %.0f%% over each P99.9's 95%% upper bound; false-trip target %g per 1,000 key-days.\n", 100*cfg.Margin, cfg.FalseTrips)
	y.WriteString("keys:\n  dimensions: [tenant, service, model, variant]\nslos:\n")

	// Per-key counts, and the groups the tail SLOs are made of: service,
	// model and operation (gen_ai.operation.name; chat and embeddings of
	// one model have latencies orders of magnitude apart).
	type group = tailGroup
	clean := map[group][]float64{}
	perKey := map[schemas.Key]int{}
	perKeyAlign := map[schemas.Key]int{}
	perKeyConf := map[schemas.Key]int{}
	errs := 0
	canary := false
	for i := range in.Spans {
		s := &in.Spans[i]
		perKey[s.Key]++
		if s.Key.Variant == "canary" {
			canary = true
		}
		if s.Has&schemas.HasAlignment != 0 {
			perKeyAlign[s.Key]++
		}
		if s.Has&schemas.HasConfidence != 0 {
			perKeyConf[s.Key]++
		}
		if s.Error {
			errs++
			continue
		}
		g := group{s.Key.Service, s.Key.Model, s.Operation}
		clean[g] = append(clean[g], s.DurationMs)
	}
	groups := make([]group, 0, len(clean))
	for g := range clean {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b group) int {
		return strings.Compare(a.service+"\x00"+a.model+"\x00"+a.operation, b.service+"\x00"+b.model+"\x00"+b.operation)
	})
	level, levelAlpha := tailLevel(cfg.FalseTrips)
	fmt.Fprintf(&y, "  # tail: level %s: a key at its budget breaches falsely in at most %g of its evaluations (%.3g per 1,000 key-days of %g evaluations; overlapping windows get no credit)\n",
		fmtLevel(level), levelAlpha, 1000*levelAlpha*float64(24*time.Hour/tailEvery), float64(24*time.Hour/tailEvery))
	windows, err := probeTail(in, groups, level)
	if err != nil {
		return Proposal{}, err
	}
	for gi, g := range groups {
		v := clean[g]
		est, err := stats.TailQuantile(v, stats.DefaultTailConfig())
		if err != nil {
			return Proposal{}, fmt.Errorf("calibrate: P99.9 of %s/%s %s: %w", g.service, g.model, g.operation, err)
		}
		upper := est.Upper
		basis := "95% upper bound"
		if est.UpperUnbounded {
			upper = 2 * est.Estimate
			basis = "2x the estimate (the data do not bound it above)"
		}
		// The budget lies above every key's every window (as the tail
		// processor decides on it, one-call rule included), not only above
		// the pooled P99.9: keys of one group differ (one tenant's calls
		// run longer), and a budget below one key's normal windows would
		// warn and breach on it all day.
		w := windows[gi]
		driver := ""
		if w.value > upper {
			upper = w.value
			basis = fmt.Sprintf("the largest window of %d, %s at %s", w.windows, w.key, time.Unix(0, w.end).UTC().Format(time.RFC3339))
			driver = fmt.Sprintf("; driven by %s", w.key)
		}
		budget := roundUp2(upper * (1 + cfg.Margin))
		name := sloName("latency", g.service, g.model)
		match := fmt.Sprintf("service: [%s], model: [%s]", yamlStr(g.service), yamlStr(g.model))
		if g.operation != "" {
			name = sloName("latency", g.service, g.model, g.operation)
			match += fmt.Sprintf(", operation: [%s]", yamlStr(g.operation))
		}
		fmt.Fprintf(&y, "  # %s/%s %s: %d successful calls, P99.9 %.0f ms [%.0f, %.0f] (%s); largest key window %.0f ms (%d windows); budget = %s x %.2f\n",
			g.service, g.model, cmp.Or(g.operation, "(no operation)"), len(v), est.Estimate, est.Lower, est.Upper, est.Method, w.value, w.windows, basis, 1+cfg.Margin)
		fmt.Fprintf(&y, "  - name: %s\n    match: {%s}\n    tail: {metric: duration_ms, include_errors: false, p: 0.999, budget: %s, level: %s}\n",
			name, match, fmtNum(budget), fmtLevel(level))
		note("%s: budget %s ms (P99.9 %.0f ms, %s %.0f ms, n=%d%s), level %s", name, fmtNum(budget), est.Estimate, basis, upper, len(v), driver, fmtLevel(level))
		// Tenants far faster than the group's slowest get a budget of their
		// own beside the group's (which still covers every tenant, new ones
		// too): the slow tenant's budget would hide their tail.
		if fast, top := w.fastTenants(cfg.Margin); len(fast) > 0 && driver != "" {
			fb := roundUp2(top * (1 + cfg.Margin))
			quoted := make([]string, len(fast))
			for i, tn := range fast {
				quoted[i] = yamlStr(tn)
			}
			fmt.Fprintf(&y, "  # the %d tenants below: typical (median) windows more than %.0f%% under the slowest tenant's; largest window %.0f ms; budget = it x %.2f\n",
				len(fast), 100*cfg.Margin, top, 1+cfg.Margin)
			fmt.Fprintf(&y, "  - name: %s-tenants\n    match: {tenant: [%s], %s}\n    tail: {metric: duration_ms, include_errors: false, p: 0.999, budget: %s, level: %s}\n",
				name, strings.Join(quoted, ", "), match, fmtNum(fb), fmtLevel(level))
			note("%s-tenants: budget %s ms for %d tenants whose median window is more than the margin under the slowest tenant's (their largest %.0f ms)", name, fmtNum(fb), len(fast), top)
		}
	}

	// Burn rate.
	ratio := float64(errs) / float64(len(in.Spans))
	target := 0.999
	if b := niceUp(cfg.ErrorHeadroom * ratio); b > 0.001 {
		target = 1 - b
	}
	if target < 0.5 {
		target = 0.5
	}
	if errs == 0 {
		// No error in the recording: there is no ratio to leave a multiple of.
		fmt.Fprintf(&y, "  # no error in %d calls: the default objective %s\n", len(in.Spans), fmtNum(target))
	} else {
		fmt.Fprintf(&y, "  # observed error ratio %.3g%% (%d of %d): objective %s leaves %.3gx of it as budget\n",
			100*ratio, errs, len(in.Spans), fmtNum(target), (1-target)/ratio)
	}
	fmt.Fprintf(&y, "  - name: availability\n    burnrate: {target: %s}\n", fmtNum(target))
	note("availability: target %s (error ratio %.3g%%; normal burn %.2f)", fmtNum(target), 100*ratio, ratio/(1-target))

	perDay := func(every time.Duration) float64 { return 24 * float64(time.Hour) / float64(every) }
	// alpha is the per-evaluation level of a false-trip target, never
	// above the processor's default (def): a default smaller than the
	// Bonferroni bound was measured, not derived — corrections' canary
	// z-test is anti-conservative that far in its tail with a few
	// corrections a window (`fusebox bench false-trips`: 1 trip and 17
	// breach episodes in 3,888 key-days at 1e-6, none and 4 at its
	// default 1e-7).
	alpha := func(every time.Duration, def float64) float64 {
		a := cfg.FalseTrips / (1000 * perDay(every))
		return math.Min(math.Max(roundDown1(a), min(1e-6, def)), def)
	}
	perWindow := func(counts map[schemas.Key]int, window time.Duration) float64 {
		if len(counts) == 0 {
			return 0
		}
		xs := make([]float64, 0, len(counts))
		for _, n := range counts {
			xs = append(xs, float64(n)/dur*window.Seconds())
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	hasRule := map[string]bool{"tail": true, "burnrate": true}
	// Decay and a model-level correction spike are acted on by a degrade
	// to the recording's busiest model, and by a trip on that model's own
	// keys (a degrade to itself would do nothing).
	fallback, others := fallbackModel(perKey)
	var rules []string
	coolDown := 5 * time.Minute
	coolDown = max(coolDown, tailWindow)

	if len(perKeyConf) > 0 {
		// Per key-day, as the breaker's target is: the drift processor
		// derives every detector's level from it.
		fa := cfg.FalseTrips / 1000
		med := perWindow(perKeyConf, driftWindow)
		minS := max(50, int(math.Ceil(med/10)))
		mode := "reference"
		if canary {
			// The canary side is small by design: its median key's count
			// per window decides, and a third of it may be judged.
			mode = "canary"
			canaries := map[schemas.Key]int{}
			for k, n := range perKeyConf {
				if k.Variant == "canary" {
					canaries[k] = n
				}
			}
			med = perWindow(canaries, driftWindow)
			minS = max(20, int(math.Ceil(med/3)))
		}
		fmt.Fprintf(&y, "  # drift: false_alarms = %g / 1000 per key-day, split over the mode's detectors; median (canary) key %.0f values per window\n",
			cfg.FalseTrips, med)
		fmt.Fprintf(&y, "  - name: confidence-drift\n    drift: {metric: confidence, mode: %s, false_alarms: %s, min_samples: %d}\n",
			mode, fmtNum(fa), minS)
		note("confidence-drift: %s mode, false_alarms %s per key-day, min_samples %d", mode, fmtNum(fa), minS)
		hasRule["drift"] = true
		coolDown = max(coolDown, driftWindow)
	}
	if len(perKeyAlign) > 0 {
		a := alpha(decayEvery, decay.DefaultConfig().Alpha)
		med := perWindow(perKeyAlign, decayWindow)
		minS := max(30, int(math.Ceil(med/10)))
		fmt.Fprintf(&y, "  # decay: alpha = %g / (1000 x %g evaluations per key-day); median key %.0f scores per window\n",
			cfg.FalseTrips, perDay(decayEvery), med)
		body := fmt.Sprintf("decay: {metric: alignment, alpha: %s, min_samples: %d}", fmtNum(a), minS)
		rules = append(rules, actionSLOs(&y, "alignment-decay", "decay", "", body, fallback, others)...)
		note("alignment-decay: alpha %s, min_samples %d; %s", fmtNum(a), minS, actionNote(fallback, others))
	}
	if len(in.Corrections) > 0 {
		a := alpha(correctionsEvery, corrections.DefaultConfig().Alpha)
		rate := float64(len(in.Corrections)) / float64(len(in.Spans))
		maxRate := math.Max(0.05, roundUp2(3*rate))
		med := perWindow(perKey, correctionsWindow)
		minR := max(50, int(math.Ceil(med/10)))
		fmt.Fprintf(&y, "  # corrections: observed rate %.3g%%, max_rate 3x it (at least 5%%); alpha = %g / (1000 x %g), at most the default %g; median key %.0f responses per window\n",
			100*rate, cfg.FalseTrips, perDay(correctionsEvery), corrections.DefaultConfig().Alpha, med)
		body := fmt.Sprintf("corrections: {max_rate: %s, alpha: %s, min_responses: %d}", fmtNum(maxRate), fmtNum(a), minR)
		rules = append(rules, actionSLOs(&y, "user-corrections", "corrections", "correction_rate", body, fallback, others)...)
		note("user-corrections: max_rate %s, alpha %s, min_responses %d; %s", fmtNum(maxRate), fmtNum(a), minR, actionNote(fallback, others))
		hasRule["corrections"] = true
		coolDown = max(coolDown, correctionsWindow)
	}
	scaled, err := proposeScaling(in, cfg, &y, note)
	if err != nil {
		return Proposal{}, err
	}
	if scaled {
		p.NoAction = append(p.NoAction, "capacity (scaling): verdicts only — a scale-out is an action to wire to your autoscaler deliberately; add {processor: scaling, action: scale_out} to the breaker's rules to command it")
	}
	fmt.Fprintf(&y, "breaker:\n  # cool_down: the longest window a rule waits on (%s)\n  cool_down: %s\n  rules:\n", coolDown, fmtDuration(coolDown))
	y.WriteString("    - {processor: tail, action: trip}\n    - {processor: burnrate, metric: burn_rate_page, action: trip}\n")
	if hasRule["drift"] {
		y.WriteString("    - {processor: drift, action: rollback}\n")
	}
	if hasRule["corrections"] {
		y.WriteString("    - {processor: corrections, metric: canary_correction_rate, action: rollback}\n")
	}
	for _, r := range rules {
		y.WriteString("    - " + r + "\n")
	}
	note("breaker: cool_down %s", fmtDuration(coolDown))
	p.YAML = y.String()
	return p, nil
}

// sloName is prefix-service-model with characters outside [a-z0-9-] as "-".
func sloName(prefix string, parts ...string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, p := range parts {
		b.WriteByte('-')
		for _, r := range strings.ToLower(p) {
			if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
				b.WriteRune(r)
			} else {
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}

// yamlStr quotes s for a YAML flow sequence.
func yamlStr(s string) string { return strconv.Quote(s) }

// roundUp2 rounds x > 0 up to two significant digits.
func roundUp2(x float64) float64 {
	if !(x > 0) {
		return x
	}
	e := math.Pow(10, math.Floor(math.Log10(x))-1)
	return math.Ceil(x/e-1e-9) * e
}

// roundDown1 rounds x > 0 down to one significant digit.
func roundDown1(x float64) float64 {
	if !(x > 0) {
		return x
	}
	e := math.Pow(10, math.Floor(math.Log10(x)))
	return math.Floor(x/e+1e-9) * e
}

// niceUp rounds x > 0 up to 1, 2 or 5 times a power of ten.
func niceUp(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	e := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if x <= m*e*(1+1e-9) {
			return m * e
		}
	}
	return 10 * e
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

// fmtLevel writes a level near 1 with every digit it has (0.9999988:
// fmtNum would round it to 0.999999), to 12 decimals.
func fmtLevel(x float64) string {
	return strconv.FormatFloat(math.Round(x*1e12)/1e12, 'f', -1, 64)
}

func fmtDur(sec float64) string { return time.Duration(sec * 1e9).Round(time.Second).String() }

// fmtDuration writes d as the config's durations are written (5m, 1h).
func fmtDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// The scaling budget's floor: a recording whose latency barely varies (a
// fixed-delay stub, a cache, constant-time embeddings) has a largest window
// stddev near 0, and a budget of 0 ms is refused by the scaling processor
// (and would call every jitter a scale-out). The floor is
// stddevFloorShare of the recording's median successful call, and at least
// stddevFloorMinMs.
const (
	stddevFloorShare = 0.1 // of the median call's duration
	stddevFloorMinMs = 1.0 // ms
)

// stddevFloorMs is the floor for in: max(stddevFloorMinMs,
// stddevFloorShare x the median duration of its successful calls), in ms,
// rounded up to two significant digits.
func stddevFloorMs(in *Input) float64 {
	var d []float64
	for i := range in.Spans {
		if !in.Spans[i].Error {
			d = append(d, in.Spans[i].DurationMs)
		}
	}
	if len(d) == 0 {
		return stddevFloorMinMs
	}
	slices.Sort(d)
	return roundUp2(max(stddevFloorMinMs, stddevFloorShare*d[len(d)/2]))
}

// scalingProbeFile runs the scaling processor at its defaults with a
// budget no window reaches: its verdicts then carry every window's
// stddev_ms and normalized_entropy and decide nothing.
const scalingProbeFile = `version: calibrate-scaling-probe
keys:
  dimensions: [tenant, service, model, variant]
slos:
  - name: probe
    scaling: {stddev_budget_ms: 1e15}
breaker: {rules: []}
`

// proposeScaling replays in through the scaling processor (the engine's
// worker, as run builds it) and writes the capacity SLO.
// It reports whether it wrote one (not when no window was judged).
func proposeScaling(in *Input, cfg Config, y *strings.Builder, note func(string, ...any)) (bool, error) {
	wc, _, err := replay.ParseWorkerConfig("scaling-probe.yaml", []byte(scalingProbeFile))
	if err != nil {
		return false, fmt.Errorf("calibrate: scaling probe: %w", err)
	}
	var sds, ents, ns []float64
	_, err = replay.StreamBatches(wc, batches(in), func(o schemas.Output) {
		for i := range o.Verdicts {
			v := &o.Verdicts[i]
			if v.SLO != "probe" || v.Status == schemas.StatusInsufficientData {
				continue
			}
			var sd, e float64
			var have int
			for _, d := range v.Details {
				switch d.Name {
				case "stddev_ms":
					sd, have = d.Value, have+1
				case "normalized_entropy":
					e, have = d.Value, have+1
				}
			}
			if have == 2 {
				sds, ents, ns = append(sds, sd), append(ents, e), append(ns, float64(v.N))
			}
		}
	})
	if err != nil {
		return false, fmt.Errorf("calibrate: scaling probe: %w", err)
	}
	if len(sds) == 0 {
		return false, nil // no window judged: no proposal
	}
	slices.Sort(ns)
	minS := max(50, int(math.Ceil(ns[len(ns)/2]/10)))
	budget := roundUp2(slices.Max(sds) * (1 + cfg.Margin))
	floor := stddevFloorMs(in)
	floored := budget < floor
	if floored {
		budget = floor
	}
	fmt.Fprintf(y, "  # scaling: %d windows (tenant, service; 5m every 1m): latency stddev up to %.0f ms, normalised entropy %.2f-%.2f;\n",
		len(sds), slices.Max(sds), slices.Min(ents), slices.Max(ents))
	if floored {
		fmt.Fprintf(y, "  # stddev_budget_ms = the floor %s ms (%.0f%% of the median call, at least %g ms): the largest x %.2f is below it; verdicts only (add {processor: scaling, action: scale_out} to act on them)\n",
			fmtNum(floor), 100*stddevFloorShare, stddevFloorMinMs, 1+cfg.Margin)
	} else {
		fmt.Fprintf(y, "  # stddev_budget_ms = the largest x %.2f; verdicts only (add {processor: scaling, action: scale_out} to act on them)\n", 1+cfg.Margin)
	}
	fmt.Fprintf(y, "  - name: capacity\n    scaling: {stddev_budget_ms: %s, entropy_high: 0.8, entropy_low: 0.5, min_samples: %d}\n", fmtNum(budget), minS)
	note("capacity: stddev_budget_ms %s (largest clean window %.0f ms), min_samples %d (verdicts only)", fmtNum(budget), slices.Max(sds), minS)
	return true, nil
}
