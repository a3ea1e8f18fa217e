package burnrate

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
)

// TestKindStateShape: every Config field shapes the windows (it is in
// Config.StateShape) or only judges them (it is listed here).
func TestKindStateShape(t *testing.T) {
	proctest.CheckStateShape(t, Kind(), "Target", "MinEvents", "MinBadEvents", "Confidence", "CUSUMFactor", "CUSUMThreshold")
}

// TestKindMetrics: Metrics lists what the processor emits with page rules
// only too (the sample, both, is checked by the registry).
func TestKindMetrics(t *testing.T) {
	c := Kind().Sample().(*Config)
	c.Ticket = nil
	proctest.CheckMetrics(t, Kind(), c, proctest.KindTraffic())
}
