package engine_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/enginebench"
	"github.com/fusebox-dev/fusebox/internal/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

func TestExplore2(t *testing.T) {
	if os.Getenv("EXPLORE2") == "" {
		t.Skip()
	}
	y, _ := os.ReadFile(os.Getenv("EXPLORE2"))
	cfg, _, err := enginebench.ParseWorkerConfig("x.yaml", y)
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []float64{100, 200, 400} {
		for seed := uint64(1); seed <= 4; seed++ {
			for _, inc := range []bool{false, true} {
				if os.Getenv("RATES") != "" && !strings.Contains(os.Getenv("RATES"), fmt.Sprint(rate)) {
					continue
				}
				sc := traffic.Demo()
				sc.Rate, sc.Seed = rate, seed
				d := 100 * time.Minute
				if !inc {
					sc.Incidents = nil
					d = 2 * time.Hour
				}
				src, _ := enginebench.Generate(sc, enginebench.Start, d, enginebench.GenConfig{})
				res, err := enginebench.Drive(cfg, enginebench.Route(src, enginebench.RouteConfig{}))
				if err != nil {
					t.Fatal(err)
				}
				start := enginebench.Start.UnixNano()
				counts := map[string]int{}
				first := map[string]int64{}
				for _, v := range res.Output.Verdicts {
					if v.Status != schemas.StatusBreach && v.Status != schemas.StatusWarn {
						continue
					}
					counts[v.SLO+" "+string(v.Status)]++
					if inc {
						for _, in := range sc.Incidents {
							tg := in.Target
							if (tg.Tenant == "" || tg.Tenant == v.Key.Tenant) && (tg.Service == "" || tg.Service == v.Key.Service) && (tg.Model == "" || tg.Model == v.Key.Model || v.Key.Model == "*") && (tg.Variant == "" || tg.Variant == v.Key.Variant || v.Key.Variant == "*") && v.WindowEndUnixNano > start+int64(in.Start) {
								k := v.SLO + " <- " + in.Name
								if _, ok := first[k]; !ok {
									first[k] = (v.WindowEndUnixNano - start - int64(in.Start)) / 60e9
								}
							}
						}
					}
				}
				var ks []string
				for k := range counts {
					ks = append(ks, k)
				}
				sort.Strings(ks)
				fmt.Printf("rate %v seed %d incidents %v:", rate, seed, inc)
				for _, k := range ks {
					fmt.Printf(" [%s %d]", k, counts[k])
				}
				fmt.Println()
				if inc {
					ks = ks[:0]
					for k := range first {
						ks = append(ks, k)
					}
					sort.Strings(ks)
					for _, k := range ks {
						fmt.Printf("    first %s: +%dm\n", k, first[k])
					}
				}
			}
		}
	}
}
