package engine_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/enginebench"
	"github.com/fusebox-dev/fusebox/internal/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

func TestExplore3(t *testing.T) {
	if os.Getenv("EXPLORE3") == "" {
		t.Skip()
	}
	y, _ := os.ReadFile(os.Getenv("EXPLORE3"))
	cfg, _, err := enginebench.ParseWorkerConfig("x.yaml", y)
	if err != nil {
		t.Fatal(err)
	}
	sc := traffic.Demo()
	fmt.Sscan(os.Getenv("RATE"), &sc.Rate)
	fmt.Sscan(os.Getenv("SEED"), &sc.Seed)
	sc.Incidents = nil
	src, _ := enginebench.Generate(sc, enginebench.Start, 2*time.Hour, enginebench.GenConfig{})
	res, _ := enginebench.Drive(cfg, enginebench.Route(src, enginebench.RouteConfig{}))
	start := enginebench.Start.UnixNano()
	for _, v := range res.Output.Verdicts {
		if v.Status == schemas.StatusBreach || (v.Status == schemas.StatusWarn && os.Getenv("WARN") != "") {
			fmt.Printf("%3dm %s %s %s %s %.4g %v\n", (v.WindowEndUnixNano-start)/60e9, v.SLO, v.Metric, v.Key.String(), v.Status, v.Value, v.Details)
		}
	}
}
