package replay

import (
	_ "embed"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
)

// ProductionYAML is an SLO file tuned as for production on the traffic of
// traffic.Demo: one SLO per processor kind, the default breaker policy and
// rollups. See production.yaml for the reasons behind each number.
//
//go:embed production.yaml
var ProductionYAML []byte

// Production returns the worker configuration of ProductionYAML.
func Production() (engine.WorkerConfig, *config.File, error) {
	return ParseWorkerConfig("production.yaml", ProductionYAML)
}

// Start is the event time the engine-level tests start their traffic at:
// a whole hour (2023-11-14 21:00:00 UTC), so that incident starts fall on
// evaluation boundaries.
var Start = time.Unix(1_699_995_600, 0)
