package ui

import (
	"errors"
	"fmt"
)

// Config bounds a Store's memory. Zero fields take the defaults.
type Config struct {
	// MaxSeries is how many series (processor, SLO, metric, key) are kept.
	// Default 512.
	MaxSeries int
	// MaxPoints is how many evaluations each series keeps, the newest.
	// Default 180 (three hours at one evaluation a minute).
	MaxPoints int
	// MaxTargets is how many fuse targets are kept. Default 256.
	MaxTargets int
	// MaxCommands is how many commands each target keeps, the newest.
	// Default 64.
	MaxCommands int
	// MaxIncidents is how many incidents are kept (DefaultMaxIncidents).
	MaxIncidents int
}

// Defaults of Config.
const (
	DefaultMaxSeries   = 512
	DefaultMaxPoints   = 180
	DefaultMaxTargets  = 256
	DefaultMaxCommands = 64
)

// ErrBadConfig is returned (wrapped) by Validate for a negative bound.
var ErrBadConfig = errors.New("ui: bad config")

// Validate reports a negative bound.
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxSeries", c.MaxSeries}, {"MaxPoints", c.MaxPoints}, {"MaxTargets", c.MaxTargets}, {"MaxCommands", c.MaxCommands}, {"MaxIncidents", c.MaxIncidents}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%w: %s %d is negative", ErrBadConfig, f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxSeries, DefaultMaxSeries)
	def(&c.MaxPoints, DefaultMaxPoints)
	def(&c.MaxTargets, DefaultMaxTargets)
	def(&c.MaxCommands, DefaultMaxCommands)
	def(&c.MaxIncidents, DefaultMaxIncidents)
	return c
}
