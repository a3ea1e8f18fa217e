// Package study holds accuracy studies of the statistics in package stats:
// seeded Monte-Carlo experiments that print a table. They are not pass/fail
// tests; `fusebox bench tail-accuracy` runs TailAccuracy.
package study

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fusebox-dev/fusebox/stats"
)

// Family is a distribution to sample from, with its exact quantile.
type Family struct {
	Name     string
	Quantile func(p float64) float64    // exact p-quantile
	Sample   func(r *rand.Rand) float64 // one draw
}

// LogNormal06 is exp(0.6*Z), Z standard normal: light-tailed (GPD domain
// xi = 0, but with a positive effective xi at finite thresholds).
func LogNormal06() Family {
	const s = 0.6
	return Family{
		Name:     "lognormal(sigma=0.6)",
		Quantile: func(p float64) float64 { return math.Exp(s * distuv.UnitNormal.Quantile(p)) },
		Sample:   func(r *rand.Rand) float64 { return math.Exp(s * r.NormFloat64()) },
	}
}

// Lomax3 is the Lomax (Pareto II) law with alpha = 3, lambda = 1: exactly
// GPD with xi = 1/3, sigma = 1/3 above 0.
func Lomax3() Family {
	return Family{
		Name:     "lomax(xi=1/3)",
		Quantile: func(p float64) float64 { return math.Pow(1-p, -1.0/3) - 1 },
		Sample: func(r *rand.Rand) float64 {
			u := 1 - r.Float64() // (0, 1]
			return math.Pow(u, -1.0/3) - 1
		},
	}
}

// TailAccuracyConfig configures TailAccuracy. Zero fields take defaults.
type TailAccuracyConfig struct {
	Families []Family // default LogNormal06, Lomax3, StallMixture
	Sizes    []int    // sample sizes; default 1000, 10000, 100000
	Trials   int      // per (family, size); default 400
	Seed     uint64   // default 1; trial i of a cell uses PCG(Seed, hash(cell, i))
	// Tail is the estimator configuration; default stats.DefaultTailConfig()
	// (P 0.999, threshold quantile 0.95, profile interval).
	Tail stats.TailConfig
	// Workers running trials in parallel; default GOMAXPROCS. The table does
	// not depend on it.
	Workers int
}

// Row is one (family, n) cell of the table. Errors are relative to the true
// quantile: RMSE = sqrt(mean((est-true)^2))/true, Bias = mean(est-true)/true.
type Row struct {
	Family  string
	N       int
	Trials  int
	True    float64 // the exact P-quantile
	EmpRMSE float64 // empirical (type-7) quantile
	EmpBias float64
	GPDRMSE float64 // TailQuantile's estimate (GPD above u, or its fallback)
	GPDBias float64
	Ratio   float64 // GPDRMSE / EmpRMSE
	// RatioSE is the Monte-Carlo standard error of Ratio (delta method on
	// the paired squared errors of the trials).
	RatioSE  float64
	Coverage float64 // share of trials whose [Lower, Upper] holds True
	// GPDShare is the share of trials that used a GPD fit (the rest fell
	// back to the empirical quantile); Unbounded the share with no upper end.
	GPDShare  float64
	Unbounded float64
	// MedianRelWidth is the median of (Upper-Lower)/True.
	MedianRelWidth float64
}

// Table is the result of TailAccuracy.
type Table struct {
	P      float64
	Method string // the interval method requested
	Rows   []Row
}

// TailAccuracy runs the study and prints its table to w (nil: no output):
// for every family and size, cfg.Trials seeded samples; in each, the
// empirical P-quantile and stats.TailQuantile's estimate and interval.
func TailAccuracy(w io.Writer, cfg TailAccuracyConfig) (Table, error) {
	if len(cfg.Families) == 0 {
		cfg.Families = []Family{LogNormal06(), Lomax3(), StallMixture()}
	}
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = []int{1000, 10000, 100000}
	}
	if cfg.Trials == 0 {
		cfg.Trials = 400
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Tail == (stats.TailConfig{}) {
		cfg.Tail = stats.DefaultTailConfig()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Trials < 2 {
		return Table{}, errors.New("study: TailAccuracyConfig.Trials must be at least 2")
	}
	if err := cfg.Tail.Validate(); err != nil {
		return Table{}, err
	}
	p := cfg.Tail.P
	if p == 0 {
		p = stats.DefaultTailConfig().P
	}
	tab := Table{P: p, Method: cfg.Tail.Interval.String()}
	for fi, fam := range cfg.Families {
		for si, n := range cfg.Sizes {
			if n < 2 {
				return Table{}, fmt.Errorf("study: sample size %d: must be at least 2", n)
			}
			row, err := runCell(fam, n, uint64(fi)<<32|uint64(si), cfg, p)
			if err != nil {
				return Table{}, err
			}
			tab.Rows = append(tab.Rows, row)
		}
	}
	if w != nil {
		if err := tab.Print(w); err != nil {
			return tab, err
		}
	}
	return tab, nil
}

// trial is the outcome of one seeded sample.
type trial struct {
	emp, est, lo, hi float64
	gpd, unbounded   bool
	err              error
}

func runCell(fam Family, n int, cell uint64, cfg TailAccuracyConfig, p float64) (Row, error) {
	truth := fam.Quantile(p)
	res := make([]trial, cfg.Trials)
	var wg sync.WaitGroup
	next := make(chan int)
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]float64, n)
			sorted := make([]float64, n)
			var est stats.TailEstimator
			for i := range next {
				r := rand.New(rand.NewPCG(cfg.Seed, cell<<20|uint64(i)))
				for j := range buf {
					buf[j] = fam.Sample(r)
				}
				copy(sorted, buf)
				slices.Sort(sorted)
				emp, err := stats.Quantile(sorted, p)
				if err != nil {
					res[i].err = err
					continue
				}
				te, err := est.Estimate(buf, cfg.Tail)
				res[i] = trial{emp: emp, est: te.Estimate, lo: te.Lower, hi: te.Upper,
					gpd: te.Method != stats.MethodEmpirical, unbounded: te.UpperUnbounded, err: err}
			}
		}()
	}
	for i := range cfg.Trials {
		next <- i
	}
	close(next)
	wg.Wait()

	row := Row{Family: fam.Name, N: n, Trials: cfg.Trials, True: truth}
	widths := make([]float64, 0, cfg.Trials)
	sqE := make([]float64, 0, cfg.Trials) // squared relative errors, empirical
	sqG := make([]float64, 0, cfg.Trials) // and GPD
	var be, bg float64
	var cover, gpd, unb int
	for i, t := range res {
		if t.err != nil {
			return Row{}, fmt.Errorf("study: %s n=%d trial %d: %w", fam.Name, n, i, t.err)
		}
		de, dg := (t.emp-truth)/truth, (t.est-truth)/truth
		sqE = append(sqE, de*de)
		sqG = append(sqG, dg*dg)
		be += de
		bg += dg
		if t.lo <= truth && truth <= t.hi {
			cover++
		}
		if t.gpd {
			gpd++
		}
		if t.unbounded {
			unb++
		}
		widths = append(widths, (t.hi-t.lo)/truth)
	}
	k := float64(cfg.Trials)
	mE, mG := meanOf(sqE), meanOf(sqG)
	row.EmpRMSE = math.Sqrt(mE)
	row.EmpBias = be / k
	row.GPDRMSE = math.Sqrt(mG)
	row.GPDBias = bg / k
	row.Ratio = row.GPDRMSE / row.EmpRMSE
	// Var(log(mG/mE)) by the delta method, paired trials.
	var vE, vG, cGE float64
	for i := range sqE {
		vE += (sqE[i] - mE) * (sqE[i] - mE)
		vG += (sqG[i] - mG) * (sqG[i] - mG)
		cGE += (sqE[i] - mE) * (sqG[i] - mG)
	}
	vE, vG, cGE = vE/(k-1), vG/(k-1), cGE/(k-1)
	vLog := (vG/(mG*mG) + vE/(mE*mE) - 2*cGE/(mG*mE)) / k
	row.RatioSE = row.Ratio * 0.5 * math.Sqrt(max(vLog, 0))
	row.Coverage = float64(cover) / k
	row.GPDShare = float64(gpd) / k
	row.Unbounded = float64(unb) / k
	slices.Sort(widths)
	row.MedianRelWidth, _ = stats.Quantile(widths, 0.5)
	return row, nil
}

func meanOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// Print writes the table.
func (t Table) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "family\tn\ttrials\ttrue P%g\temp RMSE\temp bias\tGPD RMSE\tGPD bias\tRMSE ratio (±se)\tcoverage\tGPD share\tmedian width\t\n",
		100*t.P)
	for _, r := range t.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4g\t%.2f%%\t%+.2f%%\t%.2f%%\t%+.2f%%\t%.3f ±%.3f\t%.1f%%\t%.0f%%\t%.1f%%\t\n",
			r.Family, r.N, r.Trials, r.True, 100*r.EmpRMSE, 100*r.EmpBias, 100*r.GPDRMSE, 100*r.GPDBias,
			r.Ratio, r.RatioSE, 100*r.Coverage, 100*r.GPDShare, 100*r.MedianRelWidth)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "errors relative to the true quantile; interval %s at the configured level; targets: RMSE ratio <= 0.85 at n=10000, |GPD bias| <= 3%% at n=1000, coverage in [90%%, 98%%]\n", t.Method)
	return err
}

// Targets checks the targets and returns one line per miss.
func (t Table) Targets() []string {
	var miss []string
	for _, r := range t.Rows {
		if r.N == 10000 && r.Ratio > 0.85 {
			miss = append(miss, fmt.Sprintf("%s n=%d: RMSE ratio %.3f > 0.85", r.Family, r.N, r.Ratio))
		}
		if r.N == 1000 && math.Abs(r.GPDBias) > 0.03 {
			miss = append(miss, fmt.Sprintf("%s n=%d: |bias| %.2f%% > 3%%", r.Family, r.N, 100*math.Abs(r.GPDBias)))
		}
		if r.Coverage < 0.90 || r.Coverage > 0.98 {
			miss = append(miss, fmt.Sprintf("%s n=%d: coverage %.1f%% outside [90%%, 98%%]", r.Family, r.N, 100*r.Coverage))
		}
	}
	return miss
}
