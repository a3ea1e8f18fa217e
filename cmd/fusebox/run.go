package main

import (
	"context"
	"fmt"
	"io"
)

// cmdRun is a placeholder until the engine is wired: it says so and fails.
func cmdRun(_ context.Context, args []string, _, stderr io.Writer) int {
	fs := newFlagSet("run", "--config FILE", "Runs the pipeline daemon. Not wired yet.", stderr)
	fs.String("config", "", "pipeline config file")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	fmt.Fprintln(stderr, "fusebox run: the engine is not wired yet; nothing was started")
	return exitFailure
}
