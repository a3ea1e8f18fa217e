package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/soak"
)

// benchSoak is `fusebox bench soak`: cmd/fusebox/internal/soak's run on
// this executable, its samples and table on stdout; exit 1 when a series
// grows or fusebox does not exit 0 after SIGTERM.
func benchSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench soak", "[flags]",
		"Runs `fusebox run` as a process (the demo's SLO file: every processor on) on live-paced traffic for\n"+
			"--duration of wall time — a day's pattern compressed into it, optionally a burst — and samples its\n"+
			"RSS, GC heap goal, goroutines, open files, checkpoint size, longest recent GC pause and event-time lag\n"+
			"every --every. After --warm-up, a series grows when its last third's minimum exceeds its first third's\n"+
			"maximum by a margin and its second half's Theil–Sen slope is positive at 95%. The broker is embedded\n"+
			"(kfake, in this process, every record kept in memory: minutes, not the hour) unless --brokers; for the\n"+
			"hour, Apache Kafka: go run ./internal/testharness/cmd/soakbroker -- fusebox bench soak --brokers {{brokers}}.", stdout)
	o := soak.DefaultOptions()
	fs.DurationVar(&o.Duration, "duration", o.Duration, "wall time traffic flows")
	fs.DurationVar(&o.Every, "every", o.Every, "sampling interval")
	fs.DurationVar(&o.WarmUp, "warm-up", o.WarmUp, "left out of the growth rule (the SLO windows filling)")
	fs.Float64Var(&o.Rate, "rate", o.Rate, "mean LLM calls per second")
	fs.Float64Var(&o.Amplitude, "amplitude", o.Amplitude, "the daily swing: the rate runs from rate·(1−a) to rate·(1+a)")
	fs.Float64Var(&o.Burst, "burst", o.Burst, "rate multiplier of the burst (1: none)")
	fs.Float64Var(&o.BurstAt, "burst-at", o.BurstAt, "start of the burst, as a fraction of --duration")
	fs.DurationVar(&o.BurstFor, "burst-for", o.BurstFor, "length of the burst; 0 bursts the whole run")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the traffic")
	brokers := fs.String("brokers", "", "comma-separated Kafka seeds; empty: an embedded broker")
	cfgPath := fs.String("config", "", "SLO file with {{brokers}} and {{listen}} placeholders; empty: the demo's")
	fs.StringVar(&o.LogPath, "log", "", "file for fusebox's log; empty: a temporary file")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if *brokers != "" {
		o.Brokers = strings.Split(*brokers, ",")
	}
	if *cfgPath != "" {
		b, err := os.ReadFile(*cfgPath)
		if err != nil {
			fmt.Fprintln(stderr, "fusebox bench soak:", err)
			return exitUsage
		}
		o.ConfigYAML = string(b)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "fusebox bench soak: find this executable:", err)
		return exitFailure
	}
	o.Command = []string{exe}
	if err := o.Validate(); err != nil {
		fmt.Fprintln(stderr, "fusebox bench soak:", err)
		return exitUsage
	}
	o.Progress = stdout
	res, err := soak.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "fusebox bench soak:", err)
		return exitFailure
	}
	fmt.Fprintln(stdout)
	res.WriteTable(stdout)
	if len(res.Grew()) > 0 || res.Exit != nil {
		return exitFailure
	}
	return exitOK
}
