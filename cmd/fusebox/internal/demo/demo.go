package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/product"
	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/broker"
	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/internal/sim/gen"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/schemas"
)

// DefaultSpeedup is how many times faster than the wall clock the demo's
// event time runs: the 60 minutes of the scenario play in two and a half.
const DefaultSpeedup = 24

// Options configure Run. The zero value is the interactive demo.
type Options struct {
	// Headless prints one line per verdict and per fuse command (see
	// VerdictLine, CommandLine) instead of the live view.
	Headless bool
	// Duration stops the demo after this much wall time. 0: headless, the
	// demo stops once the scenario has been published and processed to its
	// end; live, it runs until the context ends (Ctrl-C).
	Duration time.Duration
	// Speedup: event time runs this many times faster than the wall
	// clock. Default DefaultSpeedup; it must be positive.
	Speedup float64
	// Seed replaces the scenario's seed when not 0.
	Seed uint64
	// JSONL is the file the verdicts and commands are appended to.
	// Default fusebox-demo-YYYYMMDD-HHMMSS.jsonl in the current directory,
	// or in the temporary directory when the current one is not writable.
	// The pipeline's JSON logs go beside it, with the extension .log.
	JSONL string
	// ClickHouse, when set ("host:port", native protocol), also writes
	// verdicts, commands and rollups to ClickHouse, migrating the schema
	// first; ClickHouseDatabase (default "fusebox"), ClickHouseUser
	// (default "default") and ClickHousePassword say where and as whom.
	ClickHouse         string
	ClickHouseDatabase string
	ClickHouseUser     string
	ClickHousePassword string
	// Start is the event time of the scenario's start. Default: now,
	// truncated to the minute.
	Start time.Time
	// Scenario replaces the built-in scenario (Scenario()). The incidents
	// tracked are still Incidents().
	Scenario *traffic.Scenario
	// Stdout receives the live view or the headless lines, Stderr the
	// start and summary lines. Defaults os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// RedrawEvery is the live view's refresh interval. Default 1s.
	RedrawEvery time.Duration
	// HTTP replaces the built-in SLO file's http.listen (127.0.0.1:9464),
	// where /metrics, /healthz, /readyz and the live page are served;
	// "off" turns the server off. Tests pass "127.0.0.1:0". When the
	// built-in address is busy the demo takes a free port instead (and
	// says which).
	HTTP string
	// NoUI turns the live page (http.ui, on in the demo) off.
	NoUI bool
	// BeforeExit, when set, is called once the pipeline has stopped (its
	// sinks flushed: the JSONL file is complete) while the HTTP server
	// still serves, with the server's address ("" when off); the demo
	// closes the server after it returns. Tests load the page here.
	BeforeExit func(httpAddr string)
	// Plain prints the headless lines instead of the live view, but runs
	// as long as the live view would: for a stdout that is not a terminal
	// (a pipe, a file, CI), where escape codes and redraws are debris.
	Plain bool
	// Size returns the terminal's width and height in cells; the live view
	// calls it at every redraw and fits what it returns (a resize shows at
	// the next one). nil, or 0s: a view defaultWidth wide, all of it.
	Size func() (width, height int)
}

// Result is what a demo run did.
type Result struct {
	// JSONL is the file written; Log the pipeline's log file.
	JSONL, Log string
	// Verdicts and Commands the engine emitted; Applied the commands the
	// fuse client verified and applied.
	Verdicts, Commands, Applied int64
	// Finished is true when the scenario was published and processed to
	// its end before the demo stopped.
	Finished bool
	// Wall is how long the demo ran.
	Wall time.Duration
	// Outcome is what the incidents did.
	Outcome Outcome
}

// Run runs the demo until the context ends, Duration passes, or (headless
// without Duration) the scenario is done. It always shuts the pipeline
// down in order (generator, then pipeline: drain, flush, commit) and
// closes the broker. A context that ends is a clean stop, not an error.
func Run(ctx context.Context, o Options) (res Result, err error) {
	wall0 := time.Now()
	sc, err := o.setDefaults(wall0)
	if err != nil {
		return res, err
	}
	res.JSONL = o.JSONL
	res.Log = strings.TrimSuffix(o.JSONL, filepath.Ext(o.JSONL)) + ".log"

	logFile, err := os.OpenFile(res.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return res, fmt.Errorf("demo: log file: %w", err)
	}
	defer logFile.Close()
	logger, err := observe.NewLogger(logFile, "info")
	if err != nil {
		return res, err
	}

	// Everything below stops when runCtx ends; ctx ending (Ctrl-C) or the
	// end conditions cancel it.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()

	b, err := broker.Start(runCtx, broker.Config{Listen: "127.0.0.1:0", Partitions: 3, AutoCreateTopics: true,
		LogLevel: "error", LogOutput: &slogWriter{logger.With("component", "broker")}})
	if err != nil {
		return res, fmt.Errorf("demo: embedded broker: %w", err)
	}
	defer b.Close()

	cfg, err := o.sloFile(b.Addr())
	if err != nil {
		return res, err
	}
	ring, err := randomKeyring()
	if err != nil {
		return res, err
	}

	st := newState(o.Start, Incidents())
	lines := o.Headless || o.Plain
	out := newPrinter(o.Stdout)
	if lines {
		st.onVerdict = func(v *schemas.Verdict) {
			if v.Processor == effect.Name {
				out.line(EffectLine(v, o.Start))
				return
			}
			out.line(VerdictLine(v, o.Start))
		}
		st.onCommand = func(c *schemas.FuseCommand) { out.line(CommandLine(c, o.Start)) }
	}

	chNote := ""
	if o.ClickHouse != "" {
		chNote = fmt.Sprintf(", ClickHouse %s database %s", o.ClickHouse, cfg.Sinks.ClickHouse.Database)
	}
	fmt.Fprintf(o.Stderr, "fusebox demo: embedded Kafka broker on %s; scenario %q (seed %d, %g calls/s, %v of event time, %d incidents) at %g× speed\n",
		b.Addr(), sc.Name, sc.Seed, sc.Rate, sc.Duration, len(sc.Incidents), o.Speedup)
	fmt.Fprintf(o.Stderr, "fusebox demo: verdicts and fuse commands go to %s%s; pipeline logs to %s; commands signed with the throwaway key %s\n",
		o.JSONL, chNote, res.Log, ring.Active())

	// The HTTP server (metrics, readiness, the live page) comes up before
	// the pipeline and stays up until BeforeExit has returned.
	fb, err := product.Start(runCtx, product.Config{File: cfg, Logger: logger, Keys: ring, ExtraSinks: []engine.Sink{stateSink{st}},
		SourcePartitions: 3, HTTPFallback: o.HTTP == "", ServeUntilClose: true})
	if err != nil {
		return res, startError(err)
	}
	defer fb.Close()
	httpAddr, pageURL := fb.Addr(), ""
	if httpAddr != "" {
		what := "metrics on http://" + httpAddr + "/metrics"
		if fb.Page() != nil {
			pageURL = "http://" + httpAddr + "/ui/"
			what = "live page on " + pageURL + "; " + what
		}
		fmt.Fprintf(o.Stderr, "fusebox demo: %s\n", what)
	}

	p, err := fb.Open(runCtx)
	if err != nil {
		return res, fmt.Errorf("demo: start the pipeline: %w", err)
	}
	pipeCtx, stopPipe := context.WithCancel(context.WithoutCancel(runCtx))
	defer stopPipe()
	pipeDone := make(chan error, 1)
	go func() { pipeDone <- fb.Run(pipeCtx) }()

	// The fuse client reads the commands back as a gateway would: it
	// verifies every signature with the keyring.
	// Its clock is the demo's: the event time the pipeline has reached
	// (event time runs Speedup times faster than the wall clock, so a
	// gateway's wall clock would see every command expire at once).
	fc, err := fuse.NewClient(fuse.WithBrokers(b.Addr()), fuse.WithTopic(cfg.Topics.Fuse), fuse.WithKeyring(ring),
		fuse.WithClock(st.clock), fuse.WithLogger(logger.With("component", "fuse-client")))
	if err != nil {
		stopPipe()
		<-pipeDone
		return res, err
	}
	fc.OnChange(st.command)
	fuseCtx, stopFuse := context.WithCancel(context.WithoutCancel(runCtx))
	defer stopFuse()
	fuseDone := make(chan error, 1)
	go func() { fuseDone <- fc.Run(fuseCtx) }()

	// The generator publishes the scenario as a service and an app would.
	gc := gen.DefaultConfig()
	gc.Scenario, gc.Start, gc.Speedup = sc, o.Start, o.Speedup
	gc.SpansTopic, gc.CorrectionsTopic = cfg.Topics.Spans[0], cfg.Topics.Corrections[0]
	genCtx, stopGen := context.WithCancel(runCtx)
	g, err := startGenerator(genCtx, b.Addr(), gc)
	if err != nil {
		stopGen()
		stopPipe()
		<-pipeDone
		return res, err
	}
	defer g.close()
	defer stopGen() // before the producer closes
	genDone := g.done

	var deadline <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(o.RedrawEvery)
	defer tick.Stop()
	if !lines {
		io.WriteString(o.Stdout, ansiAltOn)
	}
	var (
		genRes   *genResult
		runErr   error
		finished bool
		frame    strings.Builder
	)
	draw := func() {
		if lines {
			out.flush()
			return
		}
		pr := g.progress()
		if pr.EventTime.IsZero() {
			pr.EventTime = o.Start
		}
		frame.Reset()
		var w, h int
		if o.Size != nil {
			w, h = o.Size()
		}
		st.render(&frame, header{width: w, height: h, wall: time.Since(wall0), eventNow: pr.EventTime, duration: sc.Duration, speedup: o.Speedup,
			spansPerS: pr.SpansPerSecond, jsonl: o.JSONL, clickhouse: o.ClickHouse, keyID: ring.Active(), page: pageURL, finished: finished})
		io.WriteString(o.Stdout, frame.String())
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-deadline:
			break loop
		case r := <-genDone:
			genRes = &r
			genDone = nil
			if r.err != nil {
				runErr = fmt.Errorf("demo: generator: %w", r.err)
				break loop
			}
		case err := <-pipeDone:
			pipeDone = nil
			if err == nil {
				err = errors.New("stopped by itself")
			}
			runErr = fmt.Errorf("demo: pipeline: %w", err)
			break loop
		case <-tick.C:
			if !finished && genRes != nil && !genRes.sum.Stopped && caughtUp(p, st, fc, genRes.sum.EventEnd, cfg.Time.AllowedLateness) {
				finished = true
				if o.Headless && o.Duration == 0 {
					draw()
					break loop
				}
			}
			draw()
		}
	}
	draw()
	if !lines {
		io.WriteString(o.Stdout, ansiAltOff)
	}

	// Shut down in order: stop publishing, then the pipeline (it drains,
	// flushes the sinks, saves state and commits), then the reader.
	stopGen()
	if genDone != nil {
		<-genDone
	}
	stopPipe()
	if pipeDone != nil {
		if err := <-pipeDone; err != nil && runErr == nil {
			runErr = fmt.Errorf("demo: pipeline: %w", err)
		}
	}
	// Let the fuse client read what the last checkpoint published.
	waitRead(st, fc, 3*time.Second)
	stopFuse()
	<-fuseDone
	if lines {
		out.flush()
	}

	if o.BeforeExit != nil {
		o.BeforeExit(httpAddr)
	}
	res.Verdicts, res.Commands, res.Applied = st.counts()
	res.Finished = finished
	res.Wall = time.Since(wall0)
	res.Outcome = st.outcome()
	summary(o.Stderr, &res, o.Start)
	return res, runErr
}
