package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/study"
	"github.com/fusebox-dev/fusebox/stats"
)

// cmdBench runs the long studies that are too slow for `go test`.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const studies = "Usage: fusebox bench STUDY [flags]\n\nStudies:\n  tail-accuracy   P99.9 accuracy of the empirical quantile and the GPD estimate (RMSE, bias, interval coverage)\n  false-trips     false breaches and breaker trips per 1,000 key-days of every processor's defaults on stationary traffic\n  sequential      the burn-rate page methods (multiwindow rules, Bernoulli CUSUM): false trips at the budget and detection delay of error bursts\n  drift-peers     the drift processor on seeded confidence-score streams (shifts, a decline, a variance change, a bad slice, clean days) beside River and alibi-detect (scripts/drift-peers)\n  loop            the closed loop over HTTP: each scripted incident's users' SLO with and without a fusehttp gateway following fusebox (about 60 s)\n  soak            fusebox run as a process on live traffic for an hour (--duration): what grows — memory, goroutines, files, checkpoints, GC pauses, lag\n\nRun `fusebox bench STUDY -h` for its flags.\n"
	if len(args) == 0 {
		fmt.Fprintln(stderr, "fusebox bench: name a study: tail-accuracy, false-trips, sequential, drift-peers, loop, soak; see fusebox bench -h")
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		io.WriteString(stdout, studies)
		return exitOK
	case "tail-accuracy":
		return benchTailAccuracy(ctx, args[1:], stdout, stderr)
	case "false-trips":
		return benchFalseTrips(ctx, args[1:], stdout, stderr)
	case "sequential":
		return benchSequential(ctx, args[1:], stdout, stderr)
	case "drift-peers":
		return benchDriftPeers(ctx, args[1:], stdout, stderr)
	case "loop":
		return benchLoop(ctx, args[1:], stdout, stderr)
	case "soak":
		return benchSoak(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "fusebox bench: unknown study %q (studies: tail-accuracy, false-trips, sequential, drift-peers, loop, soak); see fusebox bench -h\n", args[0])
	return exitUsage
}

func benchTailAccuracy(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench tail-accuracy", "[flags]",
		"Estimates P99.9 from seeded samples of lognormal(sigma 0.6), Lomax(xi 1/3) and a lognormal body with 6% of calls\n"+
			"stalled by 1 + GPD(xi 0.2), and prints, per family and\n"+
			"sample size, the RMSE and bias of the empirical quantile and of the GPD peaks-over-threshold estimate,\n"+
			"and the coverage of the GPD's 95% interval. Misses of the issue's targets are listed after the table.", stdout)
	trials := fs.Int("trials", 400, "seeded trials per (family, size)")
	seed := fs.Uint64("seed", 1, "seed of the first trial")
	sizes := fs.String("sizes", "1000,10000,100000", "comma-separated sample sizes")
	tq := fs.Float64("threshold-quantile", 0.95, "POT threshold u as an empirical quantile (the lowest: see --exceedance-scale)")
	xs := fs.Float64("exceedance-scale", 5, "c: at most about c*sqrt(n) exceedances, u rising above --threshold-quantile on large samples; negative: a fixed threshold")
	interval := fs.String("interval", "profile", "GPD interval method: profile or delta")
	families := fs.String("families", "lognormal,lomax,mixture", "comma-separated families: lognormal, lomax, mixture")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	cfg := study.TailAccuracyConfig{Trials: *trials, Seed: *seed, Tail: stats.DefaultTailConfig()}
	cfg.Tail.ThresholdQuantile = *tq
	cfg.Tail.ExceedanceScale = *xs
	if *xs == 0 {
		fmt.Fprintln(stderr, "fusebox bench tail-accuracy: --exceedance-scale must not be 0 (negative: a fixed threshold)")
		return exitUsage
	}
	switch *interval {
	case "profile":
		cfg.Tail.Interval = stats.IntervalProfile
	case "delta":
		cfg.Tail.Interval = stats.IntervalDelta
	default:
		fmt.Fprintf(stderr, "fusebox bench tail-accuracy: --interval must be profile or delta, got %q\n", *interval)
		return exitUsage
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 100 {
			fmt.Fprintf(stderr, "fusebox bench tail-accuracy: --sizes: %q is not a size of at least 100\n", s)
			return exitUsage
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	for _, f := range strings.Split(*families, ",") {
		switch strings.TrimSpace(f) {
		case "lognormal":
			cfg.Families = append(cfg.Families, study.LogNormal06())
		case "lomax":
			cfg.Families = append(cfg.Families, study.Lomax3())
		case "mixture":
			cfg.Families = append(cfg.Families, study.StallMixture())
		default:
			fmt.Fprintf(stderr, "fusebox bench tail-accuracy: --families: unknown family %q (lognormal, lomax, mixture)\n", f)
			return exitUsage
		}
	}
	table, err := study.TailAccuracy(stdout, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox bench tail-accuracy: %v\n", err)
		return exitFailure
	}
	if misses := table.Targets(); len(misses) > 0 {
		fmt.Fprintln(stdout, "\ntargets missed:")
		for _, m := range misses {
			fmt.Fprintln(stdout, "  "+m)
		}
	} else {
		fmt.Fprintln(stdout, "\nall targets met")
	}
	return exitOK
}

func benchFalseTrips(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench false-trips", "[flags]",
		"Runs an SLO file's processors and breaker (the engine's worker, exactly as `fusebox run` runs them) over\n"+
			"stationary seeded demo traffic (no incident) and prints, per SLO, the breach episodes and breaker trips per\n"+
			"1,000 key-days with exact 95% Poisson intervals: every one is false. By default every processor at its\n"+
			"defaults; --config runs another SLO file.", stdout)
	config := fs.String("config", "", "SLO file to study (default: every processor at its defaults)")
	rate := fs.Float64("rate", 50, "calls/s over the demo's 36 keys")
	duration := fs.Duration("duration", 24*time.Hour, "event time per run")
	runs := fs.Int("runs", 1, "independently seeded runs")
	seed := fs.Uint64("seed", 1, "seed of the first run")
	target := fs.Float64("target", 1, "false trips per 1,000 key-days the defaults must stay under (listed after the table)")
	parallel := fs.Int("parallel", 0, "runs at once (default GOMAXPROCS; the table does not depend on it)")
	progress := fs.Bool("progress", false, "print a line to stderr as each run completes")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	cfg := study.FalseTripsConfig{Rate: *rate, Duration: *duration, Runs: *runs, Seed: *seed, Parallel: *parallel}
	if *progress {
		var mu sync.Mutex
		done := 0
		cfg.Progress = func(run int) {
			mu.Lock()
			defer mu.Unlock()
			done++
			fmt.Fprintf(stderr, "run %d (seed %d) done: %d of %d\n", run, *seed+uint64(run), done, *runs)
		}
	}
	if *config != "" {
		b, err := os.ReadFile(*config)
		if err != nil {
			fmt.Fprintf(stderr, "fusebox bench false-trips: %v\n", err)
			return exitUsage
		}
		cfg.SLOFile = string(b)
	}
	if !(*rate > 0) || *duration < time.Hour || *runs < 1 || *parallel < 0 {
		fmt.Fprintln(stderr, "fusebox bench false-trips: --rate must be positive, --duration at least 1h, --runs at least 1, --parallel not negative")
		return exitUsage
	}
	table, err := study.FalseTrips(stdout, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox bench false-trips: %v\n", err)
		return exitFailure
	}
	if misses := table.Misses(*target); len(misses) > 0 {
		fmt.Fprintf(stdout, "\nnot shown to be at most %g false trips per 1,000 key-days (run longer, or more runs):\n", *target)
		for _, m := range misses {
			fmt.Fprintln(stdout, "  "+m)
		}
	} else {
		fmt.Fprintf(stdout, "\nevery SLO at most %g false trips per 1,000 key-days (95%% upper bounds)\n", *target)
	}
	return exitOK
}

func benchSequential(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench sequential", "[flags]",
		"Compares the burn-rate processor's page methods at their defaults (method multiwindow: the SRE workbook's\n"+
			"1h/5m and 6h/30m rules; method cusum: a Bernoulli CUSUM of the error rate), through the engine's worker and\n"+
			"breaker: false breach episodes and trips per 1,000 key-days on demo traffic failing at exactly the 99.9%\n"+
			"budget, and the evaluations from the start of scripted error bursts (50% down to 1% errors on\n"+
			"initech/chat, after --history of healthy traffic) to the first page breach and the first trip.", stdout)
	rate := fs.Float64("rate", 50, "calls/s over the demo's 36 keys")
	duration := fs.Duration("duration", 24*time.Hour, "event time per stationary run")
	runs := fs.Int("runs", 1, "independently seeded stationary runs per method")
	history := fs.Duration("history", 6*time.Hour, "healthy traffic before each burst")
	seed := fs.Uint64("seed", 1, "seed of the first run")
	parallel := fs.Int("parallel", 0, "runs at once (default GOMAXPROCS; the table does not depend on it)")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if !(*rate > 0) || *duration < time.Hour || *runs < 1 || *history < time.Hour || *parallel < 0 {
		fmt.Fprintln(stderr, "fusebox bench sequential: --rate must be positive, --duration and --history at least 1h, --runs at least 1, --parallel not negative")
		return exitUsage
	}
	_, err := study.Sequential(stdout, study.SequentialConfig{Rate: *rate, QuietDuration: *duration, Runs: *runs,
		History: *history, Seed: *seed, Parallel: *parallel})
	if err != nil {
		fmt.Fprintf(stderr, "fusebox bench sequential: %v\n", err)
		return exitFailure
	}
	return exitOK
}
