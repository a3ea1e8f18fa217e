package engine_test

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/enginebench"
	"github.com/fusebox-dev/fusebox/internal/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

func TestExplore(t *testing.T) {
	if os.Getenv("EXPLORE") == "" {
		t.Skip()
	}
	sc := traffic.Demo()
	if os.Getenv("NOINC") != "" {
		sc.Incidents = nil
	}
	if r := os.Getenv("RATE"); r != "" {
		fmt.Sscan(r, &sc.Rate)
	}
	if r := os.Getenv("SEED"); r != "" {
		fmt.Sscan(r, &sc.Seed)
	}
	d := 100 * time.Minute
	if os.Getenv("NOINC") != "" {
		d = 2 * time.Hour
	}
	t0 := time.Now()
	src, err := enginebench.Generate(sc, enginebench.Start, d, enginebench.GenConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generate %v: %d spans %d corrections", time.Since(t0), src.Spans(), src.Corrections())
	t0 = time.Now()
	keyed := enginebench.Route(src, enginebench.RouteConfig{})
	t.Logf("route %v", time.Since(t0))
	cfg, _, err := enginebench.Production()
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	res, err := enginebench.Drive(cfg, keyed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("drive %v: %+v", time.Since(t0), res.Stats)
	start := enginebench.Start.UnixNano()
	counts := map[string]int{}
	for _, v := range res.Output.Verdicts {
		counts[v.Processor+"/"+v.Metric+"/"+string(v.Status)]++
	}
	var ks []string
	for k := range counts {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		t.Logf("%s: %d", k, counts[k])
	}
	for _, v := range res.Output.Verdicts {
		if v.Status == schemas.StatusBreach || v.Status == schemas.StatusWarn {
			fmt.Printf("%3dm %-11s %-22s %-40s %-6s %.4g lo %.4g hi %.4g n %d\n", (v.WindowEndUnixNano-start)/60e9, v.Processor, v.Metric, v.Key.String(), v.Status, v.Value, v.Lower, v.Upper, v.N)
		}
	}
}
