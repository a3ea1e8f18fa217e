package decay

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/stats"
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
	// MinCoverage is the smallest share of the window that the scores
	// must span (newest minus oldest event time, over Window) before the
	// trend is judged: the decline extrapolates the slope to the whole
	// window, and a slope fitted on a few minutes of a new key (or of a
	// key just back) amplifies noise. Below it the verdict is
	// insufficient_data with method "short_span". Default 0.5.
	MinCoverage float64 `yaml:"min_coverage"`
	// MaxSamplesPerSlot caps scores kept per key per Every (a uniform
	// sample by span-id hash beyond it). The OLS fits use every kept
	// score. Default 200.
	MaxSamplesPerSlot int `yaml:"max_samples_per_slot"`
	// TheilSenMaxPoints caps the points of the Theil–Sen fit, which holds
	// all n(n-1)/2 pairwise slopes: when the window keeps more scores, the
	// fit uses the TheilSenMaxPoints with the smallest span-id hashes (a
	// uniform subsample that does not depend on arrival order). At most
	// stats.MaxTheilSenPoints. Default 300 (44,850 slopes, ~360 KB of
	// scratch and a few ms per evaluated key; Theil–Sen is the robustness
	// check, OLS on every kept score gives the decline).
	TheilSenMaxPoints int `yaml:"theil_sen_max_points"`
	// NoSamplesEvaluations is how many evaluations in a row a key's window
	// must hold calls without a score of the metric, and no score, before
	// the key gets a no_samples verdict (status insufficient_data, method
	// no_samples) at every evaluation while that lasts: the SLO is blind
	// there (spans that carry no alignment score) and says so. Default 5.
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
		Window            time.Duration
		Every             time.Duration
		Limit             float64
		Alpha             float64
		MinSamples        int
		MinCoverage       float64
		MaxSamplesPerSlot int
		TheilSenMaxPoints int
	}{c.Metric, c.Window, c.Every, c.Limit, c.Alpha, c.MinSamples, c.MinCoverage, c.MaxSamplesPerSlot, c.TheilSenMaxPoints})
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
		MinCoverage:       0.5,
		MaxSamplesPerSlot: 200,
		TheilSenMaxPoints: 300,

		NoSamplesEvaluations: processors.DefaultNoSamplesEvaluations,
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
	k.Fail(!(c.MinCoverage > 0 && c.MinCoverage <= 1), "min_coverage", "must be in (0, 1]")
	k.Fail(c.MaxSamplesPerSlot < 3, "max_samples_per_slot", "must be at least 3")
	k.Fail(c.TheilSenMaxPoints < 3 || c.TheilSenMaxPoints > stats.MaxTheilSenPoints,
		"theil_sen_max_points", "must be in [3, "+strconv.Itoa(stats.MaxTheilSenPoints)+"]")
	k.Fail(c.NoSamplesEvaluations < 1, "no_samples_evaluations", "must be at least 1")
	return k.Err()
}
