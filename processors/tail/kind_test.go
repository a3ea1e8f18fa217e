package tail

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
)

// TestKindStateShape: every Config field shapes the windows (it is in
// Config.StateShape) or only judges them (it is listed here).
func TestKindStateShape(t *testing.T) {
	proctest.CheckStateShape(t, Kind(), "P", "Budget", "ThresholdQuantile", "MinExceedances", "MinSamples", "NoSamplesEvaluations", "Level")
}

// TestKindMetrics: Metrics lists what the processor emits, for another
// metric and quantile too (the sample is checked by the registry).
func TestKindMetrics(t *testing.T) {
	c := Kind().Sample().(*Config)
	c.Metric, c.P = processors.MetricTTFT, 0.99
	proctest.CheckMetrics(t, Kind(), c, proctest.KindTraffic())
}
