package soak

import (
	"fmt"
	"slices"

	"github.com/fusebox-dev/fusebox/stats"
)

// minJudged is the fewest samples after the warm-up the rule judges.
const minJudged = 6

// series names one column of the samples and how much it may rise.
type series struct {
	Name, Unit string
	get        func(*Sample) float64
	// abs and rel: the last third may exceed the first third's maximum by
	// max(abs, rel × that maximum) before it counts as growth.
	abs, rel float64
	// judged is false for a series only reported (the verdict counter).
	judged bool
}

const mib = 1 << 20

// allSeries are the columns of a soak, in report order.
var allSeries = []series{
	{"rss", "MiB", func(s *Sample) float64 { return s.RSS }, 16 * mib, 0.05, true},
	{"heap_goal", "MiB", func(s *Sample) float64 { return s.HeapGoal }, 16 * mib, 0.05, true},
	{"goroutines", "", func(s *Sample) float64 { return s.Goroutines }, 10, 0.1, true},
	{"fds", "", func(s *Sample) float64 { return s.FDs }, 5, 0.1, true},
	{"checkpoint", "MiB", func(s *Sample) float64 { return s.Checkpoint }, 0.25 * mib, 0.1, true},
	// The longest of the last 256 pauses: a running maximum until 256 GCs
	// have run, so a staircase, not a trend; reported only.
	{"gc_pause_max", "ms", func(s *Sample) float64 { return s.GCPauseMax }, 0.010, 1, false},
	{"event_time_lag", "s", func(s *Sample) float64 { return s.Lag }, 30, 0.5, true},
	{"verdicts", "", func(s *Sample) float64 { return s.Verdicts }, 0, 0, false},
}

// SeriesResult summarises one series over a soak.
type SeriesResult struct {
	Name, Unit        string
	Start, End, Max   float64 // raw units (bytes, seconds, counts)
	Judged, Grows     bool
	Why               string // the figures behind Grows
	FirstMax, LastMin float64
	Slope, SlopeLow   float64 // per minute, of the second half
}

// judge applies the growth rule to the samples at or after warmUp.
func judge(s series, samples []Sample, warmUp float64) SeriesResult {
	r := SeriesResult{Name: s.Name, Unit: s.Unit, Judged: s.judged}
	var t, y []float64
	for i := range samples {
		v := s.get(&samples[i])
		if i == 0 {
			r.Start = v
		}
		r.End = v
		r.Max = max(r.Max, v)
		if samples[i].At.Minutes() >= warmUp {
			t = append(t, samples[i].At.Minutes())
			y = append(y, v)
		}
	}
	if !s.judged {
		return r
	}
	if len(y) < minJudged {
		r.Why = fmt.Sprintf("not judged: %d samples after the warm-up, fewer than %d", len(y), minJudged)
		return r
	}
	third := len(y) / 3
	r.FirstMax = slices.Max(y[:third])
	r.LastMin = slices.Min(y[len(y)-third:])
	half := len(y) / 2
	fit, err := stats.TheilSen(t[half:], y[half:], 0.95)
	if err == nil {
		r.Slope, r.SlopeLow = fit.Slope, fit.Low
	}
	margin := max(s.abs, s.rel*r.FirstMax)
	rose := r.LastMin > r.FirstMax+margin
	rising := err == nil && fit.Low > 0
	r.Grows = rose && rising
	u := func(v float64) string { return fmt.Sprintf("%.4g %s", scale(s.Unit, v), s.Unit) }
	r.Why = fmt.Sprintf("last third's min %s vs first third's max %s + margin %s; second half's slope %s/min (95%% low %s)",
		u(r.LastMin), u(r.FirstMax), u(margin), u(r.Slope), u(r.SlopeLow))
	if err != nil {
		r.Why = "not judged: " + r.Why + " (slope: " + err.Error() + ")"
		r.Grows = false
	}
	return r
}
