package drift

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
)

// TestKindStateShape: every Config field shapes the windows (it is in
// Config.StateShape) or only judges them (it is listed here).
func TestKindStateShape(t *testing.T) {
	proctest.CheckStateShape(t, Kind(), "Alpha", "Consecutive", "MinEffect", "MinSamples", "NoSamplesEvaluations",
		"FalseAlarms", "MinWindowSamples", "MaxWindow", "CUSUMShift", "SequentialMinReference",
		"SliceThreshold", "SliceQuantile", "SliceFactor", "SliceTail")
}

// TestKindMetrics: Metrics lists what the processor emits in canary mode
// too (the sample, reference mode, is checked by the registry).
func TestKindMetrics(t *testing.T) {
	c := Kind().Sample().(*Config)
	c.Mode = ModeCanary
	proctest.CheckMetrics(t, Kind(), c, proctest.KindTraffic())
}
