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
	// Alpha is the significance level of the canary test. Default 1e-7:
	// the test runs every Every on an overlapping window, so over a day
	// it looks 1,440 times per canary key, and with the handful of
	// corrections a canary collects (~7 in a 10-minute window of the demo's
	// canaries) the normal approximation is optimistic: its tail is
	// heavier than the z-test assumes. Measured by `fusebox bench
	// false-trips` (the engine and breaker on stationary demo traffic, 18
	// canary keys at ~0.2-0.5 calls/s, 2% corrected on both sides): 0.001
	// gave 8 false breaker trips in 72 key-days; 1e-5 (z >= 4.42) gave 12
	// false breach episodes and 4 false trips in 756 key-days (5.3 per
	// 1,000 [1.4, 13.5]), their z between 4.43 and 5.55 — a breach at the
	// 1e-5 level every ~45,000 canary evaluations instead of ~100,000 —
	// so 1e-7 (z >= 5.33), which none of those episodes reached three
	// times. A canary at 40% corrected against a 2% baseline still gives
	// z > 15 with 300 responses.
	Alpha float64 `yaml:"alpha"`
	// MinEffect is the smallest difference canary rate - baseline rate
	// (absolute, in correction-rate units) that can breach: a canary can
	// be significantly worse by a margin nobody would roll back for, and
	// the z-test's normal approximation is optimistic for the handful of
	// corrections a small canary collects. Significant but smaller
	// differences warn. Default 0.025 (half the default MaxRate).
	MinEffect float64 `yaml:"min_effect"`
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
	// MaxPendingCorrections caps the corrections buffered until the
	// watermark passes them (they are joined at the next evaluation). A
	// correction arriving when the buffer is full is counted as unjoined
	// at once (detail pending_overflow), never dropped. Default 100,000.
	MaxPendingCorrections int `yaml:"max_pending_corrections"`
	// MaxUnjoinedKeys caps the distinct (tenant, model, variant) keys
	// that unjoined corrections are counted under; beyond it they are
	// counted under the tenant "__overflow__". Default 1000.
	MaxUnjoinedKeys int `yaml:"max_unjoined_keys"`
}

// DefaultConfig returns the defaults listed on Config.
func DefaultConfig() Config {
	return Config{
		JoinWindow:      10 * time.Minute,
		Window:          10 * time.Minute,
		Every:           time.Minute,
		MaxRate:         0.05,
		Alpha:           1e-7,
		MinEffect:       0.025,
		CanaryVariant:   "canary",
		BaselineVariant: "baseline",
		MinResponses:    50,
		MaxIndexedSpans: 1_000_000,

		MaxPendingCorrections: 100_000,
		MaxUnjoinedKeys:       1000,
	}
}

// Validate reports every field that is wrong.
func (c *Config) Validate() error {
	var k processors.Check
	k.Fail(c.JoinWindow <= 0, "join_window", "must be a positive duration")
	k.Window("window", c.Window, "every", c.Every)
	k.Probability("max_rate", c.MaxRate)
	k.Probability("alpha", c.Alpha)
	k.Fail(!(c.MinEffect >= 0 && c.MinEffect < 1), "min_effect", "must be in [0, 1)")
	k.Fail(c.CanaryVariant == "" || c.BaselineVariant == "", "canary_variant", "canary_variant and baseline_variant must not be empty")
	k.Fail(c.CanaryVariant == c.BaselineVariant, "canary_variant", "must differ from baseline_variant")
	k.Fail(c.MinResponses < 1, "min_responses", "must be positive")
	k.Fail(c.MaxIndexedSpans < 1000, "max_indexed_spans", "must be at least 1000")
	k.Fail(c.MaxPendingCorrections < 100, "max_pending_corrections", "must be at least 100")
	k.Fail(c.MaxUnjoinedKeys < 1, "max_unjoined_keys", "must be at least 1")
	return k.Err()
}
