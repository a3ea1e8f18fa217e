package soak

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Options configure a soak. DefaultOptions gives the hour-long run of the
// docs; Validate says which field is wrong.
type Options struct {
	// Command is the fusebox executable and any leading arguments; Run
	// appends "run --config <file> --insecure-unsigned". Required.
	Command []string
	// Env is added to the child's environment (os.Environ() first).
	Env []string
	// Brokers are the Kafka seeds; empty starts an embedded kfake broker in
	// this process (not measured), which keeps every record in memory —
	// each checkpoint too, with no compaction for an hour — so that this
	// process grows by about the state topic's write rate: fine for
	// minutes, not for the hour (docs/performance.md runs that on Apache
	// Kafka, internal/testharness/cmd/soakbroker).
	Brokers []string
	// ConfigYAML is the SLO file, with "{{brokers}}" and "{{listen}}"
	// replaced by the brokers and a free loopback address for /metrics.
	// Default DefaultConfigYAML().
	ConfigYAML string
	// Duration is the wall time traffic flows. Default 1h.
	Duration time.Duration
	// Every is the sampling interval. Default 1m.
	Every time.Duration
	// WarmUp is left out of the growth rule (the SLO windows filling; the
	// demo's longest is 15m). Default 20m.
	WarmUp time.Duration
	// Rate is the mean calls per second. Default 200.
	Rate float64
	// Amplitude is the daily pattern's relative swing: the rate runs from
	// Rate·(1−Amplitude) at the start and end (night) to Rate·(1+Amplitude)
	// in the middle (midday). Default 0.5; 0 is a steady rate.
	Amplitude float64
	// Burst multiplies the rate from BurstAt (a fraction of Duration) for
	// BurstFor; BurstFor 0 bursts the whole run. Default 1 (no burst).
	Burst    float64
	BurstAt  float64
	BurstFor time.Duration
	// Seed seeds the traffic. Default 1.
	Seed uint64
	// LogPath receives the child's stderr. Default: a file in a temporary
	// directory (named in the Result).
	LogPath string
	// Progress, when set, gets one line per sample.
	Progress io.Writer
	// Logger logs the soak's own steps. Default: discard.
	Logger *slog.Logger
}

// DefaultOptions returns the hour-long soak of docs/performance.md.
func DefaultOptions() Options {
	return Options{Duration: time.Hour, Every: time.Minute, WarmUp: 20 * time.Minute, Rate: 200, Amplitude: 0.5,
		Burst: 1, BurstAt: 0.5, Seed: 1}
}

// ErrOptions wraps every Validate error.
var ErrOptions = errors.New("soak: options")

// Validate reports the first field that cannot work.
func (o *Options) Validate() error {
	bad := func(field, why string) error { return fmt.Errorf("%w: %s %s", ErrOptions, field, why) }
	switch {
	case len(o.Command) == 0 || o.Command[0] == "":
		return bad("Command", "names no executable")
	case o.Duration <= 0:
		return bad("Duration", "must be positive")
	case o.Every <= 0 || o.Every > o.Duration:
		return bad("Every", "must be positive and at most Duration")
	case o.WarmUp < 0 || o.WarmUp >= o.Duration:
		return bad("WarmUp", "must be at least 0 and less than Duration")
	case (o.Duration-o.WarmUp)/o.Every < minJudged:
		return bad("Every", fmt.Sprintf("leaves fewer than %d samples after the warm-up (Duration %v, WarmUp %v, Every %v)", minJudged, o.Duration, o.WarmUp, o.Every))
	case !(o.Rate > 0):
		return bad("Rate", "must be positive")
	case o.Amplitude < 0 || o.Amplitude >= 1:
		return bad("Amplitude", "must be in [0, 1)")
	case !(o.Burst >= 1):
		return bad("Burst", "must be at least 1")
	case o.BurstAt < 0 || o.BurstAt >= 1:
		return bad("BurstAt", "must be in [0, 1)")
	case o.BurstFor < 0:
		return bad("BurstFor", "must not be negative")
	}
	return nil
}

// rate is the calls per second at offset d of the run.
func (o *Options) rate(d time.Duration) float64 {
	x := float64(d) / float64(o.Duration) // the day, compressed
	r := o.Rate * (1 - o.Amplitude*cosTurn(x))
	if o.Burst > 1 {
		from := time.Duration(o.BurstAt * float64(o.Duration))
		if o.BurstFor == 0 || (d >= from && d < from+o.BurstFor) {
			r *= o.Burst
		}
	}
	return r
}

// peak is the highest rate of the run.
func (o *Options) peak() float64 { return o.Rate * (1 + o.Amplitude) * o.Burst }
