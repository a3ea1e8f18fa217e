package drift

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Mode says what the current window is compared with.
type Mode string

const (
	// ModeReference compares each key's current window with the reference
	// window just before it: [now-Window-ReferenceWindow, now-Window).
	ModeReference Mode = "reference"
	// ModeCanary compares the canary variant's current window with the
	// baseline variant's, for the same tenant, service and model.
	ModeCanary Mode = "canary"
)

// Config is the `drift:` section of an SLO: a two-sample Kolmogorov–Smirnov
// test (and Mann–Whitney in canary mode) with a k-consecutive rule.
type Config struct {
	// Metric is any processors.Metric. Default confidence.
	Metric processors.Metric `yaml:"metric"`
	// IncludeErrors puts failed calls into the windows when Metric is a
	// latency metric (duration_ms, ttft_ms, tpot_ms). Default false: a
	// timeout's duration is the timeout, not the model's speed, so a change
	// in the error rate would read as a latency shift (the burn-rate SLO
	// judges errors). Other metrics take every span that carries them.
	IncludeErrors bool `yaml:"include_errors"`
	// Mode is reference or canary. Default reference.
	Mode Mode `yaml:"mode"`
	// Window is the current window. Default 5m: a shift is seen once it
	// fills about MinEffect/D_full of the window (D_full its KS distance
	// when the window is all shifted), so with Every = 1m a 5m window
	// flags a shift of D_full >= 0.25 within 2 evaluations; a 10m window
	// needs D_full >= 0.5 for that.
	Window time.Duration `yaml:"window"`
	// Every is the evaluation interval. Default 1m.
	Every time.Duration `yaml:"every"`
	// ReferenceWindow is the length of the reference window (reference
	// mode). Default 1h.
	ReferenceWindow time.Duration `yaml:"reference_window"`
	// CanaryVariant and BaselineVariant name the variants compared in canary
	// mode. Defaults "canary" and "baseline".
	CanaryVariant   string `yaml:"canary_variant"`
	BaselineVariant string `yaml:"baseline_variant"`
	// Alpha is the KS test's significance level per evaluation. Default
	// 0: derived from FalseAlarms (Config.KSAlpha), FalseAlarms / (the
	// enabled detectors × KS evaluations per day) — 0.001 / (3 × 1,440) =
	// 2.3e-7 at the defaults. A Bonferroni level: whatever the overlap of
	// the windows, the expected number of significant evaluations of a
	// healthy key is at most its share of FalseAlarms per key-day, so the
	// k-in-a-row rule is not needed for control. Set, it is used as is
	// (1e-5 was the default before the false-alarm budget).
	Alpha float64 `yaml:"alpha"`
	// Consecutive is how many KS evaluations in a row must be significant
	// before the verdict is a breach (fewer: warn). Default 0: the mode's
	// (see EffectiveConsecutive) — 1 in reference mode, where Alpha
	// already holds the false alarms to FalseAlarms (3, the default
	// before, cost 2 evaluations of delay on every incident); 3 in canary
	// mode, where canary and baseline are different deployments and
	// "no difference" is never exactly true, so the streak and MinEffect
	// keep a small, real but harmless difference from rolling back.
	Consecutive int `yaml:"consecutive"`
	// MinEffect is the smallest KS distance D that can breach: a
	// practical-significance option (with many values small differences
	// are significant). Default nil: the mode's (EffectiveMinEffect) — 0
	// (off, the false-alarm budget decides) in reference mode, 0.1 in
	// canary mode (with 5,000 values a side a D of ~0.05 is significant
	// at the canary's alpha). Set, 0 included, it is used as is.
	MinEffect *float64 `yaml:"min_effect"`
	// MinSamples is the fewest values on each side for a test. Default 50.
	MinSamples int `yaml:"min_samples"`
	// MaxSamplesPerSlot caps values kept per key per Every (per Step slot:
	// MaxSamplesPerSlot × Step / Every, rounded up). Default 2000.
	MaxSamplesPerSlot int `yaml:"max_samples_per_slot"`
	// FalseAlarms is the false breach episodes per key-day the SLO allows
	// on a healthy, stationary key, split evenly between the enabled
	// detectors; each detector's per-evaluation level follows from its
	// share (see the package doc, "False alarms"). Default 0.001: one per
	// 1,000 key-days, the breaker's false-trip target, which a trip (it
	// needs breaches) cannot then exceed.
	FalseAlarms float64 `yaml:"false_alarms"`
	// Detectors lists the tests run, each with its verdict metric: ks
	// (ks_<metric>), cusum (cusum_<metric>), slice (slice_<metric>).
	// Default (empty): ks, cusum and slice in reference mode; ks in canary
	// mode (the only one it has).
	Detectors []string `yaml:"detectors"`
	// Step is the cadence of the sequential detectors (cusum, slice) and
	// the width of the window slots when one is enabled; it must divide
	// Every. Default 0: 15s when Every is a multiple of 15s above it (a
	// verdict cannot come sooner than the end of the step in which a
	// change shows), else Every. The KS test still runs every Every.
	Step time.Duration `yaml:"step"`
	// MinWindowSamples is how many values the KS current window must hold:
	// while [now-Window, now) holds fewer, the window grows by Every up
	// to MaxWindow (a count-based window for low-rate keys; the reference
	// window stays ReferenceWindow long, just before it). Default 500 (a
	// 5m window at 100 calls/min; a key at 20 calls/min gets 25m). Reference
	// mode only.
	MinWindowSamples int `yaml:"min_window_samples"`
	// MaxWindow bounds the grown current window; a whole multiple of
	// Every, at least Window. Default 0: 6 × Window (30m for the default
	// 5m). MaxWindow = Window turns growth off.
	MaxWindow time.Duration `yaml:"max_window"`
	// CUSUMShift is the mean shift, in standard deviations of the
	// reference, the cusum detector is tuned for (its reference value K is
	// half of it). Default 0.3: measured on score streams of sd 0.1 at 200
	// calls/min (15 seeds), 0.5 flags a −0.05 shift in 0.83 min and a 2 h
	// decline of −0.2 in 15.2; 0.3 in 0.93 and 13.3 (−0.10: 0.35 and
	// 0.48, −0.20: 0.23 and 0.28); 0.2 in 1.15 and 12.4.
	CUSUMShift float64 `yaml:"cusum_shift"`
	// SequentialMinReference is the fewest reference values the cusum and
	// slice detectors need (fewer: insufficient_data, the statistics
	// wait): the reference's error must stay small against K. Default 400
	// (the normal scores' mean is then within 0.05 sd of 0, one sd).
	SequentialMinReference int `yaml:"sequential_min_reference"`
	// SliceThreshold is the value below which (SliceTail low) or above
	// which (high) a call is bad for the slice detector. Default unset:
	// the reference window's SliceQuantile quantile (low) or 1 −
	// SliceQuantile (high), recomputed at every step.
	SliceThreshold *float64 `yaml:"slice_threshold"`
	// SliceQuantile calibrates the threshold from the reference when
	// SliceThreshold is unset. Default 0.01.
	SliceQuantile float64 `yaml:"slice_quantile"`
	// SliceFactor is the bad share, as a multiple of the reference's, the
	// slice detector is tuned for (p1 = SliceFactor × p0). Default 3.
	SliceFactor float64 `yaml:"slice_factor"`
	// SliceTail says which side is bad: low or high. Default: low for the
	// scores (confidence, alignment), high for the others (latency,
	// tokens).
	SliceTail string `yaml:"slice_tail"`
	// NoSamplesEvaluations is how many evaluations in a row the judged key
	// must be blind before it gets a no_samples verdict (status
	// insufficient_data, method no_samples) at every evaluation while that
	// lasts, in place of its own verdict. Blind: in reference mode, the
	// key's current window holds calls without a value of the metric and
	// no value; in canary mode, the canary's current window does, or the
	// canary has traffic and its baseline's window holds calls without a
	// value and no value (what it is compared with is blind). Default 5.
	// It only judges: editing it keeps the state, and at the default it is
	// left out of the configuration hash (MarshalJSON), so that no file
	// written before it existed changes its config version.
	NoSamplesEvaluations int `yaml:"no_samples_evaluations"`
}

// MarshalJSON is the configuration hash's view of c (the config version
// in every verdict id): NoSamplesEvaluations at its default is left out.
// Every other field is in, the detectors' too: their defaults decide
// verdicts (a file written before them changes its config version, as
// its verdicts changed).
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	if c.NoSamplesEvaluations != processors.DefaultNoSamplesEvaluations {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		Metric                 processors.Metric
		IncludeErrors          bool
		Mode                   Mode
		Window                 time.Duration
		Every                  time.Duration
		ReferenceWindow        time.Duration
		CanaryVariant          string
		BaselineVariant        string
		Alpha                  float64
		Consecutive            int
		MinEffect              float64
		MinSamples             int
		MaxSamplesPerSlot      int
		FalseAlarms            float64
		Detectors              []string
		Step                   time.Duration
		MinWindowSamples       int
		MaxWindow              time.Duration
		CUSUMShift             float64
		SequentialMinReference int
		SliceThreshold         *float64
		SliceQuantile          float64
		SliceFactor            float64
		SliceTail              string
	}{c.Metric, c.IncludeErrors, c.Mode, c.Window, c.Every, c.ReferenceWindow, c.CanaryVariant, c.BaselineVariant,
		c.Alpha, c.EffectiveConsecutive(), c.EffectiveMinEffect(), c.MinSamples, c.MaxSamplesPerSlot,
		c.FalseAlarms, c.Detectors, c.Step, c.MinWindowSamples, c.MaxWindow, c.CUSUMShift, c.SequentialMinReference,
		c.SliceThreshold, c.SliceQuantile, c.SliceFactor, c.SliceTail})
}

// DefaultConfig returns the defaults listed on Config.
func DefaultConfig() Config {
	return Config{
		Metric:            processors.MetricConfidence,
		Mode:              ModeReference,
		Window:            5 * time.Minute,
		Every:             time.Minute,
		ReferenceWindow:   time.Hour,
		CanaryVariant:     "canary",
		BaselineVariant:   "baseline",
		MinSamples:        50,
		MaxSamplesPerSlot: 2000,

		FalseAlarms:            0.001,
		MinWindowSamples:       500,
		CUSUMShift:             0.3,
		SequentialMinReference: 400,
		SliceQuantile:          0.01,
		SliceFactor:            3,

		NoSamplesEvaluations: processors.DefaultNoSamplesEvaluations,
	}
}

// Validate reports every field that is wrong.
func (c *Config) Validate() error {
	var k processors.Check
	k.Fail(!c.Metric.Valid(), "metric", "unknown metric "+string(c.Metric))
	k.Fail(c.Mode != ModeReference && c.Mode != ModeCanary, "mode", "must be reference or canary, got "+string(c.Mode))
	k.Window("window", c.Window, "every", c.Every)
	if c.Mode == ModeReference {
		k.Window("reference_window", c.ReferenceWindow, "every", c.Every)
	}
	if c.Mode == ModeCanary {
		k.Fail(c.CanaryVariant == "", "canary_variant", "must not be empty")
		k.Fail(c.BaselineVariant == "", "baseline_variant", "must not be empty")
		k.Fail(c.CanaryVariant == c.BaselineVariant, "canary_variant", "must differ from baseline_variant")
	}
	k.Fail(c.Alpha != 0 && !(c.Alpha > 0 && c.Alpha < 1), "alpha", "must be 0 (from false_alarms) or in (0, 1)")
	k.Fail(c.Consecutive < 0, "consecutive", "must be at least 1 (or 0: the mode's default)")
	k.Fail(!(c.FalseAlarms > 0) || math.IsInf(c.FalseAlarms, 0), "false_alarms", "must be a positive number per key-day")
	for _, d := range c.Detectors {
		switch {
		case !slices.Contains(allDetectors, d):
			k.Fail(true, "detectors", "unknown detector "+strconv.Quote(d)+": must be ks, cusum or slice")
		case d != DetectorKS && c.Mode == ModeCanary:
			k.Fail(true, "detectors", d+" runs in reference mode only; canary mode has ks")
		}
	}
	k.Fail(slices.Contains(c.Detectors, "") || len(slices.Compact(slices.Sorted(slices.Values(c.Detectors)))) != len(c.Detectors), "detectors", "must not repeat a detector")
	k.Fail(c.Step < 0 || (c.Step > 0 && c.Every%c.Step != 0), "step", "must be 0 (the default) or a positive duration dividing every")
	if c.Mode == ModeReference {
		k.Fail(c.MinWindowSamples < 1, "min_window_samples", "must be at least 1")
		k.Fail(c.MaxWindow != 0 && (c.MaxWindow < c.Window || (c.Every > 0 && c.MaxWindow%c.Every != 0)), "max_window", "must be 0 (6 × window) or at least window and a whole multiple of every")
	}
	k.Fail(!(c.CUSUMShift > 0) || c.CUSUMShift > 4, "cusum_shift", "must be in (0, 4] standard deviations")
	k.Fail(c.SequentialMinReference < 10, "sequential_min_reference", "must be at least 10")
	k.Fail(c.SliceThreshold != nil && (math.IsNaN(*c.SliceThreshold) || math.IsInf(*c.SliceThreshold, 0)), "slice_threshold", "must be a finite number")
	k.Fail(!(c.SliceQuantile > 0 && c.SliceQuantile < 0.5), "slice_quantile", "must be in (0, 0.5)")
	k.Fail(!(c.SliceFactor > 1) || math.IsInf(c.SliceFactor, 0), "slice_factor", "must be above 1")
	k.Fail(c.SliceTail != "" && c.SliceTail != TailLow && c.SliceTail != TailHigh, "slice_tail", "must be low or high, got "+strconv.Quote(c.SliceTail))
	k.Fail(c.MinEffect != nil && !(*c.MinEffect >= 0 && *c.MinEffect < 1), "min_effect", "must be in [0, 1)")
	k.Fail(c.MinSamples < 5, "min_samples", "must be at least 5")
	k.Fail(c.MaxSamplesPerSlot < 10, "max_samples_per_slot", "must be at least 10")
	k.Fail(c.NoSamplesEvaluations < 1, "no_samples_evaluations", "must be at least 1")
	return k.Err()
}

// The detectors (Config.Detectors).
const (
	DetectorKS    = "ks"    // two-sample KS, current window against reference
	DetectorCUSUM = "cusum" // two-sided CUSUM of normal scores against the reference
	DetectorSlice = "slice" // Bernoulli CUSUM of the share of calls beyond a threshold
)

var allDetectors = []string{DetectorKS, DetectorCUSUM, DetectorSlice}

// The slice detector's bad side (Config.SliceTail).
const (
	TailLow  = "low"
	TailHigh = "high"
)

// EffectiveConsecutive is Consecutive, or the mode's default when 0: 1
// in reference mode, 3 in canary mode.
func (c *Config) EffectiveConsecutive() int {
	switch {
	case c.Consecutive > 0:
		return c.Consecutive
	case c.Mode == ModeCanary:
		return 3
	}
	return 1
}

// EffectiveMinEffect is MinEffect, or the mode's default when unset: 0 in
// reference mode, 0.1 in canary mode.
func (c *Config) EffectiveMinEffect() float64 {
	switch {
	case c.MinEffect != nil:
		return *c.MinEffect
	case c.Mode == ModeCanary:
		return 0.1
	}
	return 0
}

// EnabledDetectors is Detectors, or the mode's default when empty, in the
// order ks, cusum, slice.
func (c *Config) EnabledDetectors() []string {
	if len(c.Detectors) == 0 {
		if c.Mode == ModeCanary {
			return []string{DetectorKS}
		}
		return allDetectors
	}
	var out []string
	for _, d := range allDetectors {
		if slices.Contains(c.Detectors, d) {
			out = append(out, d)
		}
	}
	return out
}

// has reports whether detector d is enabled.
func (c *Config) has(d string) bool { return slices.Contains(c.EnabledDetectors(), d) }

// sequential reports whether a sequential detector (cusum, slice) runs.
func (c *Config) sequential() bool { return c.has(DetectorCUSUM) || c.has(DetectorSlice) }

// slotWidth is the width of the window slots and the processor's
// interval: Step when a sequential detector runs, else Every.
func (c *Config) slotWidth() time.Duration {
	if c.sequential() && c.step() < c.Every {
		return c.step()
	}
	return c.Every
}

// defaultStep is Step's default where Every is a multiple above it.
const defaultStep = 15 * time.Second

// step is Step, or its default: 15s when Every is a multiple of 15s
// above it, else Every.
func (c *Config) step() time.Duration {
	switch {
	case c.Step > 0:
		return c.Step
	case c.Every > defaultStep && c.Every%defaultStep == 0:
		return defaultStep
	}
	return c.Every
}

// maxWindow is MaxWindow, or its default 6 × Window.
func (c *Config) maxWindow() time.Duration {
	if c.MaxWindow > 0 {
		return c.MaxWindow
	}
	return 6 * c.Window
}

// share is each detector's part of FalseAlarms, per key-day.
func (c *Config) share() float64 { return c.FalseAlarms / float64(len(c.EnabledDetectors())) }

// KSAlpha is the KS test's level per evaluation: Alpha when set, else
// the KS detector's share of FalseAlarms over the evaluations of a day,
// FalseAlarms / (detectors × 1 day / Every).
func (c *Config) KSAlpha() float64 {
	if c.Alpha > 0 {
		return c.Alpha
	}
	return c.share() / (float64(24*time.Hour) / float64(c.Every))
}

// sliceTail is SliceTail or the metric's default.
func (c *Config) sliceTail() string {
	if c.SliceTail != "" {
		return c.SliceTail
	}
	if c.Metric == processors.MetricConfidence || c.Metric == processors.MetricAlignment {
		return TailLow
	}
	return TailHigh
}
