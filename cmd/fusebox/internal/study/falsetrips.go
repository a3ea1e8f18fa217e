package study

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// DefaultsSLOFile is the SLO file of the false-trip study: one SLO per
// processor kind with every field at the processor's default, except the
// two that have none (tail.budget, scaling.stddev_budget_ms: set as the
// production file sets them for this traffic, whose healthy P99.9 is
// 1.5-4 s), and a breaker rule per kind at the breaker's default k of n.
const DefaultsSLOFile = `version: false-trips-defaults
keys:
  dimensions: [tenant, service, model, variant]
slos:
  - name: tail
    tail: {budget: 6000}
  - name: drift-reference
    drift: {metric: confidence}
  - name: drift-canary
    drift: {metric: confidence, mode: canary}
  - name: decay
    decay: {}
  - name: corrections
    corrections: {}
  - name: scaling
    scaling: {stddev_budget_ms: 1000}
  - name: burnrate
    burnrate: {}
breaker:
  rules:
    - {processor: tail, action: trip}
    - {processor: drift, action: rollback}
    - {processor: decay, action: degrade, fallback: gpt-4o-mini}
    - {processor: corrections, action: rollback}
    - {processor: scaling, action: scale_out}
    - {processor: burnrate, metric: burn_rate_page, action: trip}
`

// FalseTripsConfig configures FalseTrips. Zero fields take defaults.
type FalseTripsConfig struct {
	// SLOFile is the SLO file run (YAML). Default DefaultsSLOFile.
	SLOFile string
	// Scenario is the stationary traffic: its incidents are dropped.
	// Default traffic.Demo() at Rate.
	Scenario *traffic.Scenario
	// Rate is calls/s over all keys when Scenario is nil. Default 50:
	// 36 keys, a canary key 0.2-0.5 calls/s (small keys are the hard case).
	Rate float64
	// Duration of event time per run. Default 24h.
	Duration time.Duration
	// Runs is the number of independently seeded runs. Default 1.
	Runs int
	// Seed of the first run; run i uses Seed+i. Default 1.
	Seed uint64
	// Parallel is how many runs run at once. Default GOMAXPROCS. The table
	// does not depend on it.
	Parallel int
	// Progress, when set, is called after each run completes (from the
	// run's goroutine) with the run's index.
	Progress func(run int)
	// Breach, when set, is called with every breach verdict (from the
	// run's goroutine, with the run's index): what the false alarms were.
	Breach func(run int, v *schemas.Verdict)
}

// FalseTripsRow is one SLO of the study: what it did on traffic where
// nothing happened. Rates are per 1,000 key-days with exact (Garwood)
// 95% Poisson intervals.
type FalseTripsRow struct {
	SLO, Processor string
	Keys           int     // distinct keys with a judged verdict
	KeyDays        float64 // Keys x event-time days, summed over runs
	Evaluations    int     // judged verdicts (not insufficient_data)
	Insufficient   int
	BreachVerdicts int
	// Episodes counts breach episodes: a breach verdict of a key whose
	// previous verdict was not a breach.
	Episodes                      int
	EpisodeRate, EpisodeLo, EpiHi float64
	// Trips counts breaker commands opening a target (closed or half-open
	// to open) whose reasons are this SLO's verdicts.
	Trips                    int
	TripRate, TripLo, TripHi float64
}

// FalseTripsTable is the result of FalseTrips.
type FalseTripsTable struct {
	Rows []FalseTripsRow
	// Total is the breaker as a whole: every SLO's episodes and trips over
	// the key-days of the traffic's keys (aggregate keys such as scaling's,
	// with a "*" dimension, add trips but no key-days of their own).
	Total    FalseTripsRow
	Duration time.Duration
	Runs     int
	Rate     float64
	Spans    int64
}

// FalseTrips runs the SLO file's processors and breaker — the engine's
// worker, with its overlapping windows, k-consecutive and k-of-n rules as
// `fusebox run` runs them — over stationary seeded traffic and counts, per
// SLO, breach episodes and breaker trips per 1,000 key-days. Every one is
// false: the traffic has no incident. It prints the table to w (nil: no
// output).
func FalseTrips(w io.Writer, cfg FalseTripsConfig) (FalseTripsTable, error) {
	if cfg.SLOFile == "" {
		cfg.SLOFile = DefaultsSLOFile
	}
	if cfg.Rate == 0 {
		cfg.Rate = 50
	}
	if cfg.Duration == 0 {
		cfg.Duration = 24 * time.Hour
	}
	if cfg.Runs == 0 {
		cfg.Runs = 1
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Rate < 0 || cfg.Duration < time.Hour || cfg.Runs < 0 {
		return FalseTripsTable{}, errors.New("study: FalseTripsConfig needs a positive rate, runs and at least 1h of duration")
	}
	_, file, err := replay.ParseWorkerConfig("false-trips.yaml", []byte(cfg.SLOFile))
	if err != nil {
		return FalseTripsTable{}, err
	}
	var order []string
	for _, s := range file.SLOs {
		order = append(order, s.Name)
	}
	workers := cfg.Parallel
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, cfg.Runs)
	// Runs are independent (each its own worker, seed Seed+i): they run on
	// up to workers goroutines and are merged in run order, so the table
	// does not depend on the parallelism.
	results := make([]runResult, cfg.Runs)
	errs := make([]error, cfg.Runs)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for run := range next {
				results[run], errs[run] = falseTripsRun(cfg, run)
				if cfg.Progress != nil {
					cfg.Progress(run)
				}
			}
		}()
	}
	for run := range cfg.Runs {
		next <- run
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return FalseTripsTable{}, err
	}
	tab := FalseTripsTable{Duration: cfg.Duration, Runs: cfg.Runs}
	accs := map[string]*acc{}
	all := map[schemas.Key]bool{}
	days := cfg.Duration.Hours() / 24
	for _, res := range results {
		tab.Spans += res.spans
		tab.Rate = res.rate
		runAll := map[schemas.Key]bool{}
		for slo, a := range res.accs {
			t := accs[slo]
			if t == nil {
				t = &acc{row: FalseTripsRow{SLO: slo, Processor: a.row.Processor}, keys: map[schemas.Key]bool{}}
				accs[slo] = t
			}
			t.row.Evaluations += a.row.Evaluations
			t.row.Insufficient += a.row.Insufficient
			t.row.BreachVerdicts += a.row.BreachVerdicts
			t.row.Episodes += a.row.Episodes
			t.row.Trips += a.row.Trips
			t.row.KeyDays += float64(len(a.keys)) * days
			tab.Total.Evaluations += a.row.Evaluations
			tab.Total.BreachVerdicts += a.row.BreachVerdicts
			tab.Total.Episodes += a.row.Episodes
			tab.Total.Trips += a.row.Trips
			for k := range a.keys {
				t.keys[k] = true
				if !aggregate(k) {
					runAll[k] = true
					all[k] = true
				}
			}
		}
		tab.Total.KeyDays += float64(len(runAll)) * days
	}
	tab.Total.SLO, tab.Total.Processor, tab.Total.Keys = "all (breaker)", "*", len(all)
	tab.Total.EpisodeRate, tab.Total.EpisodeLo, tab.Total.EpiHi = poissonRate(tab.Total.Episodes, tab.Total.KeyDays)
	tab.Total.TripRate, tab.Total.TripLo, tab.Total.TripHi = poissonRate(tab.Total.Trips, tab.Total.KeyDays)
	for _, name := range order {
		a := accs[name]
		if a == nil {
			continue
		}
		r := a.row
		r.Keys = len(a.keys)
		r.EpisodeRate, r.EpisodeLo, r.EpiHi = poissonRate(r.Episodes, r.KeyDays)
		r.TripRate, r.TripLo, r.TripHi = poissonRate(r.Trips, r.KeyDays)
		tab.Rows = append(tab.Rows, r)
	}
	if w != nil {
		if err := tab.Print(w); err != nil {
			return tab, err
		}
	}
	return tab, nil
}

type acc struct {
	row  FalseTripsRow
	keys map[schemas.Key]bool
}

// runResult is one run's counts per SLO.
type runResult struct {
	accs  map[string]*acc
	spans int64
	rate  float64
}

// aggregate reports whether k is an aggregate key (a "*" dimension).
func aggregate(k schemas.Key) bool {
	return k.Tenant == schemas.Wildcard || k.Service == schemas.Wildcard || k.Model == schemas.Wildcard || k.Variant == schemas.Wildcard
}

// falseTripsRun streams run's traffic (seed cfg.Seed+run) through one
// engine worker and counts what every SLO did.
func falseTripsRun(cfg FalseTripsConfig, run int) (runResult, error) {
	// Each run parses the file itself: its worker shares nothing with the
	// runs on other goroutines.
	wc, _, err := replay.ParseWorkerConfig("false-trips.yaml", []byte(cfg.SLOFile))
	if err != nil {
		return runResult{}, err
	}
	sc := traffic.Demo()
	sc.Rate = cfg.Rate
	if cfg.Scenario != nil {
		sc = *cfg.Scenario
	}
	sc.Incidents = nil
	sc.Seed = cfg.Seed + uint64(run)
	sc.Duration = 0
	res := runResult{accs: map[string]*acc{}, rate: sc.Rate}
	lastBreach := map[string]bool{} // slo + metric + key
	sloOf := map[string]string{}    // breach verdict id -> SLO
	targetOpen := map[schemas.Key]bool{}
	get := func(slo, proc string) *acc {
		a := res.accs[slo]
		if a == nil {
			a = &acc{row: FalseTripsRow{SLO: slo, Processor: proc}, keys: map[schemas.Key]bool{}}
			res.accs[slo] = a
		}
		return a
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	st, err := replay.Stream(wc, sc, start, cfg.Duration, time.Second, func(o schemas.Output) {
		for i := range o.Verdicts {
			v := &o.Verdicts[i]
			if v.Processor == "effect" {
				continue
			}
			a := get(v.SLO, v.Processor)
			if v.Status == schemas.StatusInsufficientData {
				a.row.Insufficient++
				continue
			}
			a.row.Evaluations++
			a.keys[v.Key] = true
			lk := v.SLO + "\x00" + v.Metric + "\x00" + v.Key.String()
			breach := v.Status == schemas.StatusBreach
			if breach {
				if cfg.Breach != nil {
					cfg.Breach(run, v)
				}
				a.row.BreachVerdicts++
				sloOf[v.ID] = v.SLO
				if !lastBreach[lk] {
					a.row.Episodes++
				}
			}
			lastBreach[lk] = breach
		}
		for _, c := range o.Commands {
			open := c.State == schemas.StateOpen
			if open && !targetOpen[c.Target] {
				for _, r := range c.Reasons {
					if slo, ok := sloOf[r.VerdictID]; ok {
						res.accs[slo].row.Trips++
						break
					}
				}
			}
			targetOpen[c.Target] = open
		}
	})
	res.spans = st.Spans
	return res, err
}

// poissonRate returns k events over t key-days per 1,000 key-days with
// the exact (Garwood) 95% interval: [chi2(0.025; 2k)/2, chi2(0.975;
// 2k+2)/2] / t. With k = 0 the lower end is 0 and the upper 3.69/t.
func poissonRate(k int, t float64) (rate, lo, hi float64) {
	if !(t > 0) {
		return 0, 0, 0
	}
	if k > 0 {
		lo = distuv.ChiSquared{K: float64(2 * k)}.Quantile(0.025) / 2
	}
	hi = distuv.ChiSquared{K: float64(2*k + 2)}.Quantile(0.975) / 2
	return 1000 * float64(k) / t, 1000 * lo / t, 1000 * hi / t
}

// Print writes the table.
func (t FalseTripsTable) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "slo\tprocessor\tkeys\tkey-days\tevaluations\tbreach verdicts\tbreach episodes / 1000 key-days [95%]\tbreaker trips / 1000 key-days [95%]\t")
	for _, r := range append(slices.Clip(t.Rows), t.Total) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%d\t%d\t%d: %.1f [%.1f, %.1f]\t%d: %.1f [%.1f, %.1f]\t\n",
			r.SLO, r.Processor, r.Keys, r.KeyDays, r.Evaluations, r.BreachVerdicts,
			r.Episodes, r.EpisodeRate, r.EpisodeLo, r.EpiHi, r.Trips, r.TripRate, r.TripLo, r.TripHi)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "stationary traffic (no incident): %d run(s) x %s at %g calls/s, %d spans; every breach and trip is false\n",
		t.Runs, t.Duration, t.Rate, t.Spans)
	return err
}

// Misses lists the rows, the total included, whose breaker false-trip
// rate is not shown to be at most target per 1,000 key-days (the
// interval's upper end above it).
func (t FalseTripsTable) Misses(target float64) []string {
	var out []string
	for _, r := range append(slices.Clip(t.Rows), t.Total) {
		if r.TripHi > target {
			out = append(out, fmt.Sprintf("%s: %d trips in %.1f key-days, upper 95%% bound %.2f > %g per 1000 key-days", r.SLO, r.Trips, r.KeyDays, r.TripHi, target))
		}
	}
	slices.Sort(out)
	return out
}
