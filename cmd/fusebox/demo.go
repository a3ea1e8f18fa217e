package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/demo"
)

const demoDescription = `Runs everything in one process, nothing to install: an embedded Kafka
broker, the traffic generator with the built-in scenario (six scripted
incidents: latency tail blow-up, canary confidence drift, alignment decay,
correction spike, traffic-mix shift, error burst), the whole pipeline with
the built-in SLO file, and a fuse client that reads the signed commands
back and verifies them as a gateway would. A live view, redrawn every
second, shows per model the breaker state, P99.9 latency with its 95%
interval against the budget, the canary drift p-value, the alignment
decline, the correction rate, the request-mix entropy and the burn rate,
and the fuse commands as they happen.

At the default speedup the 60 minutes of the scenario play in two and a half
minutes of wall time; every incident trips its breaker and recovers.

Verdicts and commands are appended to a JSONL file (named at start: in the
current directory, or the temporary directory if that is not writable);
with --clickhouse they go to ClickHouse too (the schema is migrated first).
The live page (charts of every key: P99.9 with its band against the
budget, the fuse timeline, canary vs baseline ECDFs, the GPD fit's QQ
plot, burn rates) is served on http://127.0.0.1:9464/ui/ (--http, --ui);
the start line names the address.
--headless prints one line per verdict and per command instead of the view
and exits when the scenario is done (or after --duration). When stdout is
not a terminal (a pipe, a file, CI) the demo prints those plain lines too —
no escape codes, no redraw — but runs as the live view would (until Ctrl-C
or --duration). On a terminal the view fits its width (table columns that
do not fit are left out, from the right) and height (fewer fuse commands),
read at every redraw. Ctrl-C stops cleanly.

Examples:
  fusebox demo
  fusebox demo --headless --duration 90s
  fusebox demo --clickhouse 127.0.0.1:9000`

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o demo.Options
	fs := newFlagSet("demo", "[flags]", demoDescription, stdout)
	fs.BoolVar(&o.Headless, "headless", false, "print verdict and command lines instead of the live view")
	fs.DurationVar(&o.Duration, "duration", 0, "stop after this much wall time (default: headless, at the end of the scenario; live, at Ctrl-C)")
	fs.Float64Var(&o.Speedup, "speedup", demo.DefaultSpeedup, "event time runs this many times faster than the wall clock")
	fs.Uint64Var(&o.Seed, "seed", 0, "random `seed` of the traffic (default: the scenario's)")
	fs.StringVar(&o.JSONL, "jsonl", "", "`file` the verdicts and commands are appended to (default fusebox-demo-DATE-TIME.jsonl)")
	fs.StringVar(&o.ClickHouse, "clickhouse", "", "also write to the ClickHouse server at `host:port` (native protocol)")
	fs.StringVar(&o.ClickHouseDatabase, "clickhouse-database", "fusebox", "ClickHouse `database` (created if missing)")
	fs.StringVar(&o.ClickHouseUser, "clickhouse-user", "default", "ClickHouse `user`")
	fs.StringVar(&o.HTTP, "http", "", "serve /metrics, /readyz and the live page on `host:port` (\"off\": no server; default 127.0.0.1:9464, a free port if that is busy)")
	ui := fs.Bool("ui", true, "serve the live page on /ui/ (http.ui)")
	password := fs.String("clickhouse-password", "", "ClickHouse `password` (default: $FUSEBOX_CLICKHOUSE_PASSWORD)")
	loopMode := fs.Bool("loop", false, "instead: the closed loop over HTTP (a fusehttp gateway, simulated providers; 60 s; see fusebox bench loop)")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if *loopMode {
		return demoLoop(ctx, stdout, stderr)
	}
	if !(o.Speedup > 0) {
		fmt.Fprintf(stderr, "fusebox demo: --speedup %v: must be positive\n", o.Speedup)
		return exitUsage
	}
	if o.Duration < 0 {
		fmt.Fprintf(stderr, "fusebox demo: --duration %v: must not be negative\n", o.Duration)
		return exitUsage
	}
	o.NoUI = !*ui
	o.ClickHousePassword = *password
	if o.ClickHousePassword == "" {
		o.ClickHousePassword = os.Getenv("FUSEBOX_CLICKHOUSE_PASSWORD")
	}
	o.Stdout, o.Stderr = stdout, stderr
	if !o.Headless {
		if fd, ok := terminalFD(stdout); ok {
			o.Size = func() (int, int) {
				w, h, err := term.GetSize(fd)
				if err != nil {
					return 0, 0
				}
				return w, h
			}
		} else {
			o.Plain = true
		}
	}
	if _, err := demo.Run(ctx, o); err != nil {
		fmt.Fprintf(stderr, "fusebox demo: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// terminalFD returns w's file descriptor when w is a terminal.
func terminalFD(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}
