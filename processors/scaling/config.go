package scaling

import (
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Config is the `scaling:` section of an SLO: the normalised entropy of the
// request mix and the latency variance, turned into scale hints by a
// decision table.
type Config struct {
	// Scope lists the key dimensions that identify a scaling target; the
	// others are aggregated (they become "*" in the verdict's key). Default
	// [tenant, service].
	Scope []string `yaml:"scope"`
	// Mix lists what the entropy is computed over: any of route, model,
	// variant, tenant, service (the categories are the distinct tuples).
	// Default [route, model].
	Mix []string `yaml:"mix"`
	// Window and Every as for the other processors. Defaults 5m and 1m.
	Window time.Duration `yaml:"window"`
	Every  time.Duration `yaml:"every"`
	// EntropyHigh is the normalised entropy at or above which the mix is
	// "high". Default 0.8.
	EntropyHigh float64 `yaml:"entropy_high"`
	// EntropyLow is the normalised entropy below which the mix is "low".
	// Default 0.5.
	EntropyLow float64 `yaml:"entropy_low"`
	// StdDevBudgetMs is the latency standard deviation (ms) above which
	// variance is "high"; the variance budget is its square. Required.
	StdDevBudgetMs float64 `yaml:"stddev_budget_ms"`
	// ScaleInAfter is how many consecutive windows with both entropy and
	// variance low give a scale-in hint. Default 3.
	ScaleInAfter int `yaml:"scale_in_after"`
	// MinSamples is the fewest spans in the window for a decision.
	// Default 50.
	MinSamples int `yaml:"min_samples"`
	// MaxSamplesPerSlot is deprecated and ignored: it capped the latency
	// sample the variance was computed over, and the variance is now exact
	// over every span of the window (per-slot integer moments). It is
	// still accepted, whatever its value, so older SLO files load, and
	// kept at its old default 2000 in DefaultConfig and in StateShape so
	// the SLOs' state ids, and so their checkpoints, survive the upgrade.
	MaxSamplesPerSlot int `yaml:"max_samples_per_slot"`
	// MaxCategories caps the distinct mix categories counted per scope key
	// per Every; categories beyond it are pooled into one "other" category
	// (the ones kept are those with the smallest category hash, so the set
	// does not depend on arrival order). Default 1000.
	MaxCategories int `yaml:"max_categories"`
}

// DefaultConfig returns the defaults listed on Config.
func DefaultConfig() Config {
	return Config{
		Scope:             []string{"tenant", "service"},
		Mix:               []string{"route", "model"},
		Window:            5 * time.Minute,
		Every:             time.Minute,
		EntropyHigh:       0.8,
		EntropyLow:        0.5,
		ScaleInAfter:      3,
		MinSamples:        50,
		MaxSamplesPerSlot: 2000, // ignored (deprecated)
		MaxCategories:     1000,
	}
}

// sampleConfig is DefaultConfig with a standard deviation budget of
// 100 ms: Kind().Sample.
func sampleConfig() Config { c := DefaultConfig(); c.StdDevBudgetMs = 100; return c }

// Validate reports every field that is wrong.
func (c *Config) Validate() error {
	var k processors.Check
	for _, d := range c.Scope {
		k.Fail(d != "tenant" && d != "service" && d != "model" && d != "variant", "scope", "unknown dimension "+d)
	}
	k.Fail(len(c.Mix) == 0, "mix", "must list at least one of route, model, variant, tenant, service")
	for _, d := range c.Mix {
		k.Fail(d != "route" && d != "model" && d != "variant" && d != "tenant" && d != "service", "mix", "unknown category "+d)
	}
	k.Window("window", c.Window, "every", c.Every)
	k.Fail(!(c.EntropyHigh > 0 && c.EntropyHigh <= 1), "entropy_high", "must be in (0, 1]")
	k.Fail(!(c.EntropyLow >= 0 && c.EntropyLow < c.EntropyHigh), "entropy_low", "must be in [0, entropy_high)")
	k.Fail(!(c.StdDevBudgetMs > 0), "stddev_budget_ms", "must be set to a positive number of ms")
	k.Fail(c.ScaleInAfter < 1, "scale_in_after", "must be at least 1")
	k.Fail(c.MinSamples < 2, "min_samples", "must be at least 2")
	k.Fail(c.MaxCategories < 2, "max_categories", "must be at least 2")
	return k.Err()
}

// CheckDimensions requires the tenant in Scope when the SLO file's keys
// have one: a scope without it would mix the state of several keyed
// partitions' workers (fusebox shards its state by tenant).
func (c *Config) CheckDimensions(dims []string) error {
	if slices.Contains(dims, "tenant") && !slices.Contains(c.Scope, "tenant") {
		return &processors.ConfigError{Field: "scope", Reason: "must include tenant: fusebox shards its state by tenant"}
	}
	return nil
}
