package study

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/stats"
)

// TestTailAccuracyShort runs a small version of the study: it checks that
// the table is well formed, reproducible and sane, not the targets
// (those need the full 400 trials; see `fusebox bench tail-accuracy`).
func TestTailAccuracyShort(t *testing.T) {
	cfg := TailAccuracyConfig{Sizes: []int{1000, 3000}, Trials: 24, Seed: 7}
	var out bytes.Buffer
	tab, err := TailAccuracy(&out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 6 || tab.P != 0.999 || tab.Method != stats.MethodGPDProfile {
		t.Fatalf("table %+v", tab)
	}
	for _, r := range tab.Rows {
		for _, v := range []float64{r.True, r.EmpRMSE, r.EmpBias, r.GPDRMSE, r.GPDBias, r.Ratio, r.Coverage, r.GPDShare, r.MedianRelWidth} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("row %+v has a non-finite number", r)
			}
		}
		if r.Trials != 24 || !(r.EmpRMSE > 0) || !(r.GPDRMSE > 0) || r.Coverage < 0 || r.Coverage > 1 {
			t.Errorf("row %+v", r)
		}
		// Sanity, far looser than the targets: 24 trials are noisy.
		if math.Abs(r.GPDBias) > 0.25 || r.GPDRMSE > 0.6 || r.Coverage < 0.6 || r.GPDShare != 1 || !(r.MedianRelWidth > 0) {
			t.Errorf("implausible row %+v", r)
		}
	}
	text := out.String()
	for _, want := range []string{"lognormal(sigma=0.6)", "lomax(xi=1/3)", "stall mixture", "RMSE ratio", "coverage", "3000"} {
		if !strings.Contains(text, want) {
			t.Errorf("printed table lacks %q:\n%s", want, text)
		}
	}
	// Seeded: the same configuration gives the same table, whatever the
	// number of workers.
	cfg.Workers = 1
	again, err := TailAccuracy(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tab.Rows {
		if again.Rows[i] != tab.Rows[i] {
			t.Errorf("row %d differs between runs: %+v vs %+v", i, again.Rows[i], tab.Rows[i])
		}
	}
	if miss := (Table{Rows: []Row{{Family: "f", N: 10000, Ratio: 0.9, Coverage: 0.95}}}).Targets(); len(miss) != 1 {
		t.Errorf("Targets did not flag a ratio of 0.9: %v", miss)
	}
}

func TestTailAccuracyConfigErrors(t *testing.T) {
	if _, err := TailAccuracy(nil, TailAccuracyConfig{Trials: 1}); err == nil {
		t.Error("1 trial accepted")
	}
	if _, err := TailAccuracy(nil, TailAccuracyConfig{Sizes: []int{1}, Trials: 2}); err == nil {
		t.Error("sample size 1 accepted")
	}
	if _, err := TailAccuracy(nil, TailAccuracyConfig{Trials: 2, Sizes: []int{100}, Tail: stats.TailConfig{P: 2}}); err == nil {
		t.Error("invalid tail config accepted")
	}
}

func BenchmarkTailAccuracyTrial(b *testing.B) {
	// One trial at n = 10,000 of each family (sample, sort, empirical and
	// GPD estimate with profile interval).
	cfg := TailAccuracyConfig{Sizes: []int{10000}, Trials: 2, Workers: 1}
	for b.Loop() {
		if _, err := TailAccuracy(nil, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
