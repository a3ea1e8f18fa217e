package drift

import (
	"fmt"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`drift:`) and the
// Processor of every verdict this package emits.
const Name = "drift"

// Kind is the drift kind, for processors/registry: its defaults are a
// valid sample.
func Kind() processors.Kind { return processors.NewKind(Name, DefaultConfig, DefaultConfig, New) }

// Interval is Step when a sequential detector runs (cusum, slice), else
// Every: the KS test runs every Every either way.
func (c *Config) Interval() time.Duration { return c.slotWidth() }

// MetricIntervals: ks runs every Every, cusum and slice every Step (the
// slot width): see processors.MetricIntervals.
func (c *Config) MetricIntervals() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, d := range c.EnabledDetectors() {
		switch d {
		case DetectorKS:
			out[MetricName(*c)] = c.Every
		case DetectorCUSUM:
			out[CUSUMMetricName(*c)] = c.slotWidth()
		case DetectorSlice:
			out[SliceMetricName(*c)] = c.slotWidth()
		}
	}
	return out
}

// Metrics are the enabled detectors' verdict metrics, named for the
// metric: MetricName (ks), CUSUMMetricName (cusum), SliceMetricName
// (slice).
func (c *Config) Metrics() []string {
	var m []string
	for _, d := range c.EnabledDetectors() {
		switch d {
		case DetectorKS:
			m = append(m, MetricName(*c))
		case DetectorCUSUM:
			m = append(m, CUSUMMetricName(*c))
		case DetectorSlice:
			m = append(m, SliceMetricName(*c))
		}
	}
	return m
}

// Summary names the metric, the thresholds, the streak, the window and
// what it is compared against (the reference window, or the baseline
// variant in canary mode).
func (c *Config) Summary() string {
	against := "the previous " + c.ReferenceWindow.String()
	if c.Mode == ModeCanary {
		against = "variant " + c.BaselineVariant + " (canary " + c.CanaryVariant + ")"
	}
	out := fmt.Sprintf("drift %s: KS p < %.3g and D >= %g, %d in a row, %v window against %s, every %v",
		MetricName(*c), c.KSAlpha(), c.EffectiveMinEffect(), c.EffectiveConsecutive(), c.Window, against, c.Every)
	if !c.has(DetectorKS) {
		out = "drift " + string(c.Metric) + ": " + string(c.Mode) + " against the previous " + c.ReferenceWindow.String()
	}
	if c.Mode == ModeReference && c.maxWindow() > c.Window && c.has(DetectorKS) {
		out += fmt.Sprintf(" (window grown to %d values, at most %v)", c.MinWindowSamples, c.maxWindow())
	}
	if c.has(DetectorCUSUM) {
		out += fmt.Sprintf("; cusum of normal scores tuned to %g sd, every %v", c.CUSUMShift, c.slotWidth())
	}
	if c.has(DetectorSlice) {
		side, q := "below", c.SliceQuantile
		if c.sliceTail() == TailHigh {
			side, q = "above", 1-c.SliceQuantile
		}
		cut := fmt.Sprintf("the reference's %g quantile", q)
		if c.SliceThreshold != nil {
			cut = fmt.Sprint(*c.SliceThreshold)
		}
		out += fmt.Sprintf("; slice: share of calls %s %s (x%g), every %v", side, cut, c.SliceFactor, c.slotWidth())
	}
	return out + fmt.Sprintf("; %g false alarms per key-day", c.FalseAlarms)
}

// StateShape: the metric, whether failed calls count, the mode, the
// windows, the interval, the variants and the sample cap shape the
// windows, and so does the slot width when it is Step (a sequential
// detector runs) rather than Every; alpha, the streak length, the
// minimum effect, the detectors' parameters and counts only judge them.
// MaxWindow is not in: a window grows into the slots the state holds.
func (c *Config) StateShape() any {
	shape := []any{c.Metric, c.IncludeErrors, c.Mode, c.Window, c.Every, c.ReferenceWindow, c.CanaryVariant, c.BaselineVariant, c.MaxSamplesPerSlot}
	if w := c.slotWidth(); w != c.Every {
		shape = append(shape, w)
	}
	return shape
}
