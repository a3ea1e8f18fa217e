package decay

import (
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Config is the `decay:` section of an SLO: the trend of a score over the
// window, by OLS and Theil–Sen, and the exponential decay rate.
type Config struct {
	// Metric is alignment or confidence. Default alignment.
	Metric processors.Metric `yaml:"metric"`
	// Window is the span of event time the trend is fitted over. Default 1h.
	Window time.Duration `yaml:"window"`
	// Every is the evaluation interval. Default 5m.
	Every time.Duration `yaml:"every"`
	// Limit is the most negative acceptable decline over the window
	// (slope × window span, in score units). Default -0.12.
	Limit float64 `yaml:"limit"`
	// Alpha is the significance level of the OLS slope. Default 0.01.
	Alpha float64 `yaml:"alpha"`
	// MinSamples is the fewest scores in the window for a fit. Default 30.
	MinSamples int `yaml:"min_samples"`
	// MaxSamplesPerSlot caps scores kept per key per Every (Theil–Sen is
	// quadratic in the sample size). Default 200.
	MaxSamplesPerSlot int `yaml:"max_samples_per_slot"`
}

// DefaultConfig returns the defaults listed on Config.
func DefaultConfig() Config {
	return Config{
		Metric:            processors.MetricAlignment,
		Window:            time.Hour,
		Every:             5 * time.Minute,
		Limit:             -0.12,
		Alpha:             0.01,
		MinSamples:        30,
		MaxSamplesPerSlot: 200,
	}
}

// Validate reports every field that is wrong.
func (c *Config) Validate() error {
	var k processors.Check
	k.Fail(c.Metric != processors.MetricAlignment && c.Metric != processors.MetricConfidence,
		"metric", "must be alignment or confidence, got "+string(c.Metric))
	k.Window("window", c.Window, "every", c.Every)
	k.Fail(!(c.Limit < 0), "limit", "must be negative (a decline)")
	k.Probability("alpha", c.Alpha)
	k.Fail(c.MinSamples < 3, "min_samples", "must be at least 3")
	k.Fail(c.MaxSamplesPerSlot < 3, "max_samples_per_slot", "must be at least 3")
	return k.Err()
}
