package corrections

import (
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Config is the `corrections:` section of an SLO: the share of responses
// users corrected, with a Wilson interval, and canary vs baseline by a
// two-proportion test.
type Config struct {
	// JoinWindow is how long after a span ends a correction can still be
	// joined to it (by trace id, else session id). Default 10m.
	JoinWindow time.Duration `yaml:"join_window"`
	// Window and Every as for the other processors. Defaults 10m and 1m.
	Window time.Duration `yaml:"window"`
	Every  time.Duration `yaml:"every"`
	// MaxRate is the budget: the largest acceptable correction rate.
	// Default 0.05.
	MaxRate float64 `yaml:"max_rate"`
	// Alpha is the significance level of the canary test. Default 0.01.
	Alpha float64 `yaml:"alpha"`
	// CanaryVariant and BaselineVariant name the variants compared.
	// Defaults "canary" and "baseline".
	CanaryVariant   string `yaml:"canary_variant"`
	BaselineVariant string `yaml:"baseline_variant"`
	// MinResponses is the fewest responses in the window for a verdict
	// other than insufficient_data. Default 50.
	MinResponses int `yaml:"min_responses"`
	// MaxIndexedSpans caps the spans per partition kept for joining
	// (oldest evicted first). Default 1,000,000.
	MaxIndexedSpans int `yaml:"max_indexed_spans"`
}

// DefaultConfig returns the defaults listed on Config.
func DefaultConfig() Config {
	return Config{
		JoinWindow:      10 * time.Minute,
		Window:          10 * time.Minute,
		Every:           time.Minute,
		MaxRate:         0.05,
		Alpha:           0.01,
		CanaryVariant:   "canary",
		BaselineVariant: "baseline",
		MinResponses:    50,
		MaxIndexedSpans: 1_000_000,
	}
}

// Validate reports every field that is wrong.
func (c *Config) Validate() error {
	var k processors.Check
	k.Fail(c.JoinWindow <= 0, "join_window", "must be a positive duration")
	k.Window("window", c.Window, "every", c.Every)
	k.Probability("max_rate", c.MaxRate)
	k.Probability("alpha", c.Alpha)
	k.Fail(c.CanaryVariant == "" || c.BaselineVariant == "", "canary_variant", "canary_variant and baseline_variant must not be empty")
	k.Fail(c.CanaryVariant == c.BaselineVariant, "canary_variant", "must differ from baseline_variant")
	k.Fail(c.MinResponses < 1, "min_responses", "must be positive")
	k.Fail(c.MaxIndexedSpans < 1000, "max_indexed_spans", "must be at least 1000")
	return k.Err()
}
