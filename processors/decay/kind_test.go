package decay

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
)

// TestKindStateShape: every Config field shapes the windows (it is in
// Config.StateShape) or only judges them (it is listed here).
func TestKindStateShape(t *testing.T) {
	proctest.CheckStateShape(t, Kind(), "Limit", "Alpha", "MinSamples", "MinCoverage", "TheilSenMaxPoints", "NoSamplesEvaluations")
}
