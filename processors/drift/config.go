package drift

import (
	"encoding/json"
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
	// Alpha is the significance level. Default 1e-5: the test runs every
	// Every on windows that overlap (a 5m window evaluated every minute
	// shares 80% of its data with the previous one), so the Consecutive
	// rule multiplies the protection far less than alpha^k, and a key is
	// tested 1,440 times a day. Measured by `fusebox bench false-trips`
	// (the engine and breaker on 72 key-days of stationary demo traffic at
	// 50 calls/s, canaries of 0.2-0.5 calls/s): 0.001 gave 5 false breach
	// episodes and 1 false breaker trip (14 per 1,000 key-days) on the
	// reference mode; the 1 per 1,000 key-days target needs about 100x
	// less, and a 0.2 confidence shift on a canary still gives p < 1e-8.
	Alpha float64 `yaml:"alpha"`
	// Consecutive is how many evaluations in a row must be significant
	// before the verdict is a breach (fewer: warn). Default 3.
	Consecutive int `yaml:"consecutive"`
	// MinEffect is the smallest KS distance D that can breach: with
	// thousands of samples any difference is significant, and an SRE cares
	// about differences that matter. Default 0.1.
	MinEffect float64 `yaml:"min_effect"`
	// MinSamples is the fewest values on each side for a test. Default 50.
	MinSamples int `yaml:"min_samples"`
	// MaxSamplesPerSlot caps values kept per key per Every. Default 2000.
	MaxSamplesPerSlot int `yaml:"max_samples_per_slot"`
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
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	if c.NoSamplesEvaluations != processors.DefaultNoSamplesEvaluations {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		Metric            processors.Metric
		IncludeErrors     bool
		Mode              Mode
		Window            time.Duration
		Every             time.Duration
		ReferenceWindow   time.Duration
		CanaryVariant     string
		BaselineVariant   string
		Alpha             float64
		Consecutive       int
		MinEffect         float64
		MinSamples        int
		MaxSamplesPerSlot int
	}{c.Metric, c.IncludeErrors, c.Mode, c.Window, c.Every, c.ReferenceWindow, c.CanaryVariant, c.BaselineVariant,
		c.Alpha, c.Consecutive, c.MinEffect, c.MinSamples, c.MaxSamplesPerSlot})
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
		Alpha:             1e-5,
		Consecutive:       3,
		MinEffect:         0.1,
		MinSamples:        50,
		MaxSamplesPerSlot: 2000,

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
	k.Probability("alpha", c.Alpha)
	k.Fail(c.Consecutive < 1, "consecutive", "must be at least 1")
	k.Fail(c.MinEffect < 0 || c.MinEffect >= 1, "min_effect", "must be in [0, 1)")
	k.Fail(c.MinSamples < 5, "min_samples", "must be at least 5")
	k.Fail(c.MaxSamplesPerSlot < 10, "max_samples_per_slot", "must be at least 10")
	k.Fail(c.NoSamplesEvaluations < 1, "no_samples_evaluations", "must be at least 1")
	return k.Err()
}
