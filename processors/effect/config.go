package effect

import (
	"errors"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Name is the Processor of every effect verdict.
const Name = "effect"

// MaxEvaluations bounds Config.Evaluations.
const MaxEvaluations = 1000

// Config is the `effect:` section of the SLO file. Decode the YAML over
// DefaultConfig() so that omitted fields keep their defaults.
type Config struct {
	// Evaluations is how many evaluations of the signal's SLO after a
	// command the judge waits for it to recover (see the package doc).
	// A sliding window still holds traffic from before the command for
	// window/every evaluations, so set it above that: the default 10 gives
	// a 5-minute window evaluated every minute 5 evaluations of traffic
	// after the command only. In [1, 1000]; default 10.
	Evaluations int `yaml:"evaluations"`
	// MaxTargets bounds the targets the judge remembers (one judgement
	// each, the latest); a command for a new target beyond it is not
	// judged and is counted (Stats.TargetOverflow). Default 100000, the
	// breaker's default max_targets.
	MaxTargets int `yaml:"max_targets"`
	// EvictAfter forgets a target whose judgement is over and which got no
	// command for this long (event time). Default 24h.
	EvictAfter time.Duration `yaml:"evict_after"`
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Evaluations: 10, MaxTargets: 100_000, EvictAfter: 24 * time.Hour}
}

// Validate reports every wrong field as a *schemas.FieldError relative to
// the section (e.g. "evaluations"), joined with errors.Join.
func (c *Config) Validate() error {
	var errs []error
	fail := func(bad bool, field, reason string) {
		if bad {
			errs = append(errs, &schemas.FieldError{Field: field, Reason: reason})
		}
	}
	fail(c.Evaluations < 1 || c.Evaluations > MaxEvaluations, "evaluations",
		"must be in [1, "+strconv.Itoa(MaxEvaluations)+"], got "+strconv.Itoa(c.Evaluations))
	fail(c.MaxTargets < 1, "max_targets", "must be positive, got "+strconv.Itoa(c.MaxTargets))
	fail(c.EvictAfter <= 0, "evict_after", "must be a positive duration, got "+c.EvictAfter.String())
	return errors.Join(errs...)
}
