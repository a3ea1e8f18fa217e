package main

import (
	"context"
	"io"
)

// Exit codes of every command.
const (
	exitOK      = 0 // success
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad command line: unknown command, flag or value
)

// command is one `fusebox` subcommand. Its run function parses args with its
// own flag.FlagSet, writes results to stdout and diagnostics to stderr,
// returns an exit code, and stops when ctx is cancelled (SIGINT, SIGTERM).
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is every subcommand, in the order `fusebox help` lists them. To
// add one, write its <name>.go in this directory and add its line here.
var commands = []command{
	{"run", "run the pipeline daemon: Kafka in, verdicts and signed fuse commands out; metrics, health, graceful shutdown", cmdRun},
	{"demo", "run everything in one process on the built-in scenario, with a live view: nothing to install", cmdDemo},
	{"config", "check an SLO file: `fusebox config check FILE` prints ok and the SLOs, or every error with its line", cmdConfig},
	{"broker", "run an embedded Kafka-protocol broker (franz-go kfake) for demos and development", cmdBroker},
	{"gen", "publish realistic OTLP spans and correction events to Kafka from a seeded scenario", cmdGen},
	{"calibrate", "propose a first SLO file from recorded traffic and show what it (and the current file) would have done", cmdCalibrate},
	{"bench", "run a long study (tail-accuracy, false-trips) and print its table", cmdBench},
	{"version", "print the module version and the Go version fusebox was built with", cmdVersion},
	{"migrate", "create or upgrade the ClickHouse schema (versioned migrations; re-running is a no-op)", cmdMigrate},
	{"spans", "print the LLM calls fusebox reads from a span topic, one JSON line each: what fusebox sees of your spans", cmdSpans},
	{"report", "print the reporting SQL's results for a time range (table or CSV)", cmdReport},
	{"openslo", "convert the SLO file to OpenSLO v1 documents and back: `fusebox openslo export FILE`, `fusebox openslo import FILE...`", cmdOpenSLO},
}
