package tail

import (
	"encoding/json"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Config is the `tail:` section of an SLO: the P-quantile of one latency
// metric, estimated by peaks over threshold, judged against a budget.
type Config struct {
	// Metric is duration_ms, ttft_ms or tpot_ms. Default duration_ms.
	Metric processors.Metric `yaml:"metric"`
	// IncludeErrors puts failed calls (span status ERROR or error.type
	// set) into the window. Default false: a latency tail measures the
	// calls that succeeded. A provider's 60 s timeouts at 0.5% of calls
	// are the P99.9 of a window that holds them, so any budget under the
	// timeout would breach on a healthy service; errors belong to the
	// burn-rate SLO, which counts them.
	IncludeErrors bool `yaml:"include_errors"`
	// P is the quantile to estimate. Default 0.999.
	P float64 `yaml:"p"`
	// Budget is the largest acceptable P-quantile, in the metric's unit
	// (ms, or ms/token for tpot_ms). Required.
	Budget float64 `yaml:"budget"`
	// Window is the span of event time each evaluation looks at. Default 10m.
	Window time.Duration `yaml:"window"`
	// Every is the evaluation interval. Default 1m.
	Every time.Duration `yaml:"every"`
	// ThresholdQuantile is the empirical quantile of the window used as the
	// POT threshold u on windows of up to (5/(1-ThresholdQuantile))^2 kept
	// values (10,000 at the default); on larger windows u rises so that
	// about 5*sqrt(kept) values exceed it (see
	// stats.TailConfig.ThresholdQuantileAt). Default 0.95.
	ThresholdQuantile float64 `yaml:"threshold_quantile"`
	// MinExceedances is the fewest values above u for a GPD fit; with fewer
	// the verdict carries the empirical quantile, labelled as such.
	// Default 50.
	MinExceedances int `yaml:"min_exceedances"`
	// MinSamples is the fewest values in the window for any verdict other
	// than insufficient_data. Default 200.
	MinSamples int `yaml:"min_samples"`
	// MaxSamplesPerSlot caps the values kept per key per Every of event
	// time (a uniform sample by span-id hash beyond it). Default 20000.
	MaxSamplesPerSlot int `yaml:"max_samples_per_slot"`
	// NoSamplesEvaluations is how many evaluations in a row a key's window
	// must hold calls that matched the SLO but carried no value of the
	// metric, and no sample, before the key gets a no_samples verdict
	// (status insufficient_data, method no_samples) at every evaluation
	// while that lasts: the SLO is blind there (a ttft_ms SLO on spans
	// that carry no time to first token) and says so. Default 5. It only
	// judges: editing it keeps the state, and at the default it is left out
	// of the configuration hash (MarshalJSON), so that no file written
	// before it existed changes its config version.
	NoSamplesEvaluations int `yaml:"no_samples_evaluations"`
	// Level is the confidence level of each verdict's two-sided interval
	// [Lower, Upper], in (0, 1). A window breaches when Lower exceeds the
	// budget: with the true P-quantile at or below the budget, an
	// evaluation breaches falsely with probability at most (1-Level)/2
	// (2.5% at the default, asymptotically: the GPD profile interval's
	// coverage). Overlapping windows repeat a breach, so the breaker's
	// k-of-n rule does not divide that rate: over a key-day of 1,440
	// evaluations the worst case (a key whose P-quantile sits exactly at
	// the budget) is 1,440 x (1-Level)/2 false breaches. `fusebox
	// calibrate` sets Level from its false-trip target: 1 - 2a, a = target
	// / (1,000 x evaluations per key-day) rounded down to one significant
	// digit (0.9999988 for 1 per 1,000 key-days), and budgets with a margin
	// above every recorded window. At such levels the bound rests on the
	// profile interval's asymptotic coverage far in its tail, which no test
	// checks (the false-trip study measures the result instead). Default
	// 0.95. Like NoSamplesEvaluations it is left out of the configuration
	// hash at its default.
	Level float64 `yaml:"level"`
}

// DefaultNoSamplesEvaluations is NoSamplesEvaluations' default.
const DefaultNoSamplesEvaluations = processors.DefaultNoSamplesEvaluations

// DefaultLevel is Level's default.
const DefaultLevel = 0.95

// MarshalJSON is the configuration hash's view of c (the config version
// in every verdict id): NoSamplesEvaluations and Level at their defaults
// are left out, so that no file written before they existed changes its
// config version.
func (c Config) MarshalJSON() ([]byte, error) {
	noSamples, level := c.NoSamplesEvaluations, c.Level
	if noSamples == DefaultNoSamplesEvaluations {
		noSamples = 0
	}
	if level == DefaultLevel {
		level = 0
	}
	return json.Marshal(struct {
		Metric               processors.Metric
		IncludeErrors        bool
		P                    float64
		Budget               float64
		Window               time.Duration
		Every                time.Duration
		ThresholdQuantile    float64
		MinExceedances       int
		MinSamples           int
		MaxSamplesPerSlot    int
		NoSamplesEvaluations int     `json:",omitempty"`
		Level                float64 `json:",omitempty"`
	}{c.Metric, c.IncludeErrors, c.P, c.Budget, c.Window, c.Every, c.ThresholdQuantile, c.MinExceedances, c.MinSamples, c.MaxSamplesPerSlot, noSamples, level})
}

// DefaultConfig returns the defaults listed on Config (Budget is left 0:
// it has no sensible default and must be set).
func DefaultConfig() Config {
	return Config{
		Metric:               processors.MetricDuration,
		P:                    0.999,
		Window:               10 * time.Minute,
		Every:                time.Minute,
		ThresholdQuantile:    0.95,
		MinExceedances:       50,
		MinSamples:           200,
		MaxSamplesPerSlot:    20000,
		NoSamplesEvaluations: DefaultNoSamplesEvaluations,
		Level:                DefaultLevel,
	}
}

// sampleConfig is DefaultConfig with a budget of 3000 (ms of duration_ms):
// Kind().Sample.
func sampleConfig() Config { c := DefaultConfig(); c.Budget = 3000; return c }

// Validate reports every field that is wrong.
func (c *Config) Validate() error {
	var k processors.Check
	k.Fail(c.Metric != processors.MetricDuration && c.Metric != processors.MetricTTFT && c.Metric != processors.MetricTPOT,
		"metric", "must be duration_ms, ttft_ms or tpot_ms, got "+string(c.Metric))
	k.Probability("p", c.P)
	k.Fail(!(c.Budget > 0), "budget", "must be set to a positive number (ms, or ms/token for tpot_ms)")
	k.Window("window", c.Window, "every", c.Every)
	k.Probability("threshold_quantile", c.ThresholdQuantile)
	k.Fail(c.ThresholdQuantile >= c.P, "threshold_quantile", "must be below p")
	k.Fail(c.MinExceedances < 10, "min_exceedances", "must be at least 10")
	k.Fail(c.MinSamples < 1, "min_samples", "must be positive")
	k.Fail(c.MaxSamplesPerSlot < 100, "max_samples_per_slot", "must be at least 100")
	k.Fail(c.NoSamplesEvaluations < 1, "no_samples_evaluations", "must be at least 1")
	k.Fail(!(c.Level > 0 && c.Level < 1), "level", "must be in (0, 1), e.g. 0.95")
	return k.Err()
}
