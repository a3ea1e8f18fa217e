package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/loop"
)

// benchLoop is `fusebox bench loop`: cmd/fusebox/internal/loop's run, its table on
// stdout.
func benchLoop(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench loop", "[flags]",
		"Sends users' requests through a fusehttp gateway to simulated OpenAI-compatible providers with scripted\n"+
			"incidents (a latency tail, an error burst, a canary's confidence drift), while fusebox on an in-process broker judges the gateway's\n"+
			"spans and the gateway follows its fuse commands; the same traffic goes through a gateway without the\n"+
			"loop. Prints, per incident, the users' P99.9, error rate and compliance with and without the loop, and\n"+
			"the failing provider's own (its direct traffic, the half-open probes). Wall time: --duration.", stdout)
	o := loop.DefaultOptions()
	fs.DurationVar(&o.Duration, "duration", o.Duration, "wall time of the run (the incidents are at 8-38 s)")
	fs.Float64Var(&o.Rate, "rate", o.Rate, "users' requests per second per incident key")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the providers' latencies and failures")
	fs.BoolVar(&o.NoShadow, "no-shadow", false, "send half-open probes as users' requests instead of shadow copies")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if o.Duration < 40*time.Second || o.Rate <= 0 {
		fmt.Fprintln(stderr, "fusebox bench loop: --duration must be at least 40s (the incidents end at 38 s) and --rate positive")
		return exitUsage
	}
	res, err := loop.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "fusebox bench loop:", err)
		return exitFailure
	}
	res.WriteTable(stdout, o.Budget, o.ConfidenceFloor)
	fmt.Fprintf(stdout, "Gateway decisions with the loop: %v; %d spans exported; %d commands applied.\n", res.Counters, res.Spans, len(res.Commands))
	return exitOK
}
