package study

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// burnRateSLOFile is the SLO file of one page method: the burn-rate
// processor at its defaults but for method and without tickets (only the
// page verdicts, which the methods judge differently, are counted), and
// the breaker's default rule on the page verdicts.
func burnRateSLOFile(method string) string {
	return `version: burnrate-` + method + `
keys:
  dimensions: [tenant, service, model, variant]
slos:
  - name: burnrate-` + method + `
    burnrate: {method: ` + method + `, ticket: []}
breaker:
  rules:
    - {processor: burnrate, metric: burn_rate_page, action: trip}
`
}

// BurnRateMethods are the page methods the sequential study compares.
var BurnRateMethods = []string{"multiwindow", "cusum"}

// SequentialConfig configures Sequential. Zero fields take defaults.
type SequentialConfig struct {
	// Rate is the demo traffic's calls/s (36 keys). Default 50.
	Rate float64
	// QuietDuration and Runs give the stationary part: Runs runs of
	// QuietDuration at an error rate of exactly the budget (1 - 0.999),
	// the worst traffic a false-alarm bound covers. Defaults 24h and 1.
	QuietDuration time.Duration
	Runs          int
	// Magnitudes are the error shares of the scripted bursts, each its own
	// run: History of the demo's healthy traffic (0.02% errors), then the
	// burst on initech/chat for 90 minutes. Default 0.5, 0.1, 0.05, 0.02,
	// 0.01 (burn rates 500 down to 10 at 99.9%).
	Magnitudes []float64
	// History is the healthy traffic before each burst. Default 6h, the
	// longest page window: with less, the 6h rule judges a window that is
	// mostly burst and pages early.
	History time.Duration
	// Seed of the first run. Default 1.
	Seed uint64
	// Parallel runs at once. Default GOMAXPROCS.
	Parallel int
}

// SequentialRow is one page method: its false breach episodes and trips on
// stationary traffic at the budget, and the evaluations from each burst's
// start to the first page breach and to the breaker's trip (0: none within
// the burst).
type SequentialRow struct {
	Method           string
	Quiet            FalseTripsRow
	BreachAt, TripAt []int
}

// SequentialTable is the result of Sequential.
type SequentialTable struct {
	Rows       []SequentialRow
	Magnitudes []float64
	Cfg        SequentialConfig
}

// Sequential compares the burn-rate processor's page methods (the
// workbook's multiwindow rules and the Bernoulli CUSUM) at their defaults,
// through the engine's worker and breaker as `fusebox run` runs them: the
// false breaches and trips per 1,000 key-days on stationary traffic at the
// budget, and the detection delay, in evaluations, of scripted error
// bursts of decreasing size. It prints the table to w (nil: no output).
func Sequential(w io.Writer, cfg SequentialConfig) (SequentialTable, error) {
	if cfg.Rate == 0 {
		cfg.Rate = 50
	}
	if cfg.QuietDuration == 0 {
		cfg.QuietDuration = 24 * time.Hour
	}
	if cfg.Runs == 0 {
		cfg.Runs = 1
	}
	if cfg.Magnitudes == nil {
		cfg.Magnitudes = []float64{0.5, 0.1, 0.05, 0.02, 0.01}
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.History == 0 {
		cfg.History = 6 * time.Hour
	}
	if !(cfg.Rate > 0) || cfg.QuietDuration < time.Hour || cfg.Runs < 0 {
		return SequentialTable{}, errors.New("study: SequentialConfig needs a positive rate and runs and at least 1h of quiet duration")
	}
	tab := SequentialTable{Magnitudes: cfg.Magnitudes, Cfg: cfg}
	for _, m := range BurnRateMethods {
		quiet := traffic.Demo()
		quiet.Rate = cfg.Rate
		quiet.ErrorRate = 0.001
		ft, err := FalseTrips(nil, FalseTripsConfig{SLOFile: burnRateSLOFile(m), Scenario: &quiet,
			Duration: cfg.QuietDuration, Runs: cfg.Runs, Seed: cfg.Seed, Parallel: cfg.Parallel})
		if err != nil {
			return tab, err
		}
		row := SequentialRow{Method: m, Quiet: ft.Total}
		for i, mag := range cfg.Magnitudes {
			b, t, err := burstDelay(m, cfg.Rate, mag, cfg.History, cfg.Seed+uint64(i))
			if err != nil {
				return tab, err
			}
			row.BreachAt = append(row.BreachAt, b)
			row.TripAt = append(row.TripAt, t)
		}
		tab.Rows = append(tab.Rows, row)
	}
	if w != nil {
		if err := tab.Print(w); err != nil {
			return tab, err
		}
	}
	return tab, nil
}

// burstDelay runs one scripted burst under method and returns the
// evaluations (of Every = 1m) from its start to the first page breach and
// to the first trip on a key it hits; 0 when none came within the burst.
func burstDelay(method string, rate, magnitude float64, quiet time.Duration, seed uint64) (breach, trip int, err error) {
	wc, _, err := replay.ParseWorkerConfig("burst.yaml", []byte(burnRateSLOFile(method)))
	if err != nil {
		return 0, 0, err
	}
	const length = 90 * time.Minute
	sc := traffic.Demo()
	sc.Rate, sc.Seed, sc.Duration = rate, seed, 0
	target := traffic.Target{Tenant: "initech", Service: "chat"}
	sc.Incidents = []traffic.Incident{{Name: "errors", Kind: traffic.ErrorBurst, Start: quiet, End: quiet + length, Target: target, Magnitude: magnitude}}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	s := start.Add(quiet).UnixNano()
	evals := func(end int64) int { return int((end - s) / int64(time.Minute)) }
	breachAt := map[string]int64{} // breach verdict id -> window end
	_, err = replay.Stream(wc, sc, start, quiet+length, time.Second, func(o schemas.Output) {
		for _, v := range o.Verdicts {
			if v.Metric != "burn_rate_page" || v.Status != schemas.StatusBreach || v.WindowEndUnixNano <= s || !replay.Hits(target, v.Key) {
				continue
			}
			breachAt[v.ID] = v.WindowEndUnixNano
			if n := evals(v.WindowEndUnixNano); breach == 0 || n < breach {
				breach = n
			}
		}
		for _, c := range o.Commands {
			if c.State != schemas.StateOpen || c.IssuedAtUnixNano <= s {
				continue
			}
			for _, r := range c.Reasons {
				if _, ok := breachAt[r.VerdictID]; ok {
					if n := evals(c.IssuedAtUnixNano); trip == 0 || n < trip {
						trip = n
					}
				}
			}
		}
	})
	return breach, trip, err
}

// Print writes the table.
func (t SequentialTable) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "page method\tkey-days at the budget\tfalse breach episodes / 1000 key-days [95%]\tfalse trips / 1000 key-days [95%]\t")
	for _, m := range t.Magnitudes {
		fmt.Fprintf(tw, "%g%% errors: breach, trip\t", 100*m)
	}
	fmt.Fprintln(tw)
	for _, r := range t.Rows {
		q := r.Quiet
		fmt.Fprintf(tw, "%s\t%.1f\t%d: %.2f [%.2f, %.2f]\t%d: %.2f [%.2f, %.2f]\t", r.Method, q.KeyDays,
			q.Episodes, q.EpisodeRate, q.EpisodeLo, q.EpiHi, q.Trips, q.TripRate, q.TripLo, q.TripHi)
		for i := range t.Magnitudes {
			fmt.Fprintf(tw, "%s, %s\t", delay(r.BreachAt[i]), delay(r.TripAt[i]))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "stationary part: %d run(s) x %s of demo traffic at %g calls/s with 0.1%% errors (exactly the 99.9%% budget);\n"+
		"bursts: evaluations (1m) from the start of 90 min of errors on initech/chat, after %s of healthy traffic, to the first page breach and the first trip (-: none)\n",
		t.Cfg.Runs, t.Cfg.QuietDuration, t.Cfg.Rate, t.Cfg.History)
	return err
}

func delay(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}
