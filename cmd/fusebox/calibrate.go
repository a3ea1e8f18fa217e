package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/calibrate"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/schemas"
)

// cmdCalibrate proposes an SLO file from recorded traffic and shows what
// it, and the current file, would have done on that traffic.
func cmdCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("calibrate", "(--spans FILE | --brokers HOST:PORT --last D) [flags]",
		"Reads recorded traffic — from files (OTLP/JSON messages, one per line, as the Collector's file exporter writes\n"+
			"them; correction events, one JSON object per line), or the last D of the span and correction topics —, writes a proposed SLO file (P99.9 budgets per\n"+
			"service and model from the successful calls, the burn-rate objective from the observed error ratio,\n"+
			"drift/decay/correction alphas from the false-trip target, minimum samples from each key's rate, the\n"+
			"breaker's cool-down from the windows), and prints what the proposed file — and the current one, with\n"+
			"--config — would have done on that traffic: verdicts by status and breaker trips per SLO. Deterministic.", stdout)
	spans := fs.String("spans", "", "file of OTLP/JSON trace messages, one per line (else the topics are read)")
	var kf kafkaFlags
	kf.register(fs, "fusebox-calibrate")
	spansTopic := fs.String("spans-topic", "", "span topic (default: --config's first topics.spans, else otlp_spans)")
	correctionsTopic := fs.String("corrections-topic", "", "correction topic (default: --config's first topics.corrections, else fusebox.corrections; - for none)")
	encoding := fs.String("encoding", "auto", "span topic encoding: otlp_proto, otlp_json or auto")
	lastD := daysValue(time.Hour)
	fs.Var(&lastD, "last", "with the topics: read the records of the last `D` (by Kafka record timestamp: 90m, 36h, 1d, 1w) up to the end offsets at start")
	last := (*time.Duration)(&lastD)
	timeout := fs.Duration("timeout", 5*time.Minute, "with the topics: give up (an error) when reading takes longer")
	corrections := fs.String("corrections", "", "file of correction events, one JSON object per line")
	current := fs.String("config", "", "the current SLO file: its attributes and limits decode the input, and its verdicts are shown")
	out := fs.String("out", "fusebox.proposed.yaml", "where to write the proposed SLO file (- for stdout)")
	margin := fs.Float64("margin", 0.25, "added to each P99.9's 95% upper bound to make its budget")
	target := fs.Float64("false-trips", 1, "false-trip target per 1,000 key-days the significance levels come from")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if !(*margin >= 0) || !(*target > 0) || *last <= 0 {
		fmt.Fprintln(stderr, "fusebox calibrate: --margin must be >= 0, --false-trips and --last positive")
		return exitUsage
	}
	names, lim := schemas.DefaultAttributeNames(), schemas.DefaultLimits()
	topicSpans, topicCorrections := "otlp_spans", "fusebox.corrections"
	var currentBytes []byte
	if *current != "" {
		f, err := config.Load(*current)
		if err != nil {
			fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
			return exitFailure
		}
		names, lim = f.Attributes, f.Limits
		if len(f.Topics.Spans) > 0 {
			topicSpans = f.Topics.Spans[0]
		}
		if len(f.Topics.Corrections) > 0 {
			topicCorrections = f.Topics.Corrections[0]
		}
		if currentBytes, err = os.ReadFile(*current); err != nil {
			fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
			return exitFailure
		}
	}
	var in calibrate.Input
	if *spans != "" {
		if err := readInto(*spans, func(r io.Reader) error { return in.ReadOTLPJSONLines(r, *spans, names, lim) }); err != nil {
			fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
			return exitFailure
		}
	} else {
		if *spansTopic != "" {
			topicSpans = *spansTopic
		}
		if *correctionsTopic == "-" {
			topicCorrections = ""
		} else if *correctionsTopic != "" {
			topicCorrections = *correctionsTopic
		}
		opts, err := kf.opts()
		if err != nil {
			fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
			return exitUsage
		}
		rctx, cancel := context.WithTimeout(ctx, *timeout)
		err = in.ReadTopics(rctx, opts, calibrate.TopicSource{SpansTopic: topicSpans, CorrectionsTopic: topicCorrections,
			Encoding: *encoding, Names: names, Limits: lim}, time.Now().Add(-*last).UnixMilli())
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
			return exitFailure
		}
	}
	if *corrections != "" {
		if err := readInto(*corrections, func(r io.Reader) error { return in.ReadCorrectionLines(r, *corrections) }); err != nil {
			fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
			return exitFailure
		}
	}
	for _, p := range in.Problems {
		fmt.Fprintf(stderr, "fusebox calibrate: skipped: %s\n", p)
	}
	in.Sort()
	p, err := calibrate.Propose(&in, calibrate.Config{Margin: *margin, FalseTrips: *target})
	if err != nil {
		fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "read %d spans, %d corrections (%d records skipped), %s of event time\n",
		len(in.Spans), len(in.Corrections), in.Skipped, fmtSeconds(p.Duration))
	for _, n := range p.Notes {
		fmt.Fprintln(stdout, "  "+n)
	}
	for _, n := range p.NoAction {
		fmt.Fprintf(stderr, "fusebox calibrate: no breaker rule for %s\n", n)
	}
	if *out == "-" {
		fmt.Fprint(stdout, p.YAML)
	} else if err := os.WriteFile(*out, []byte(p.YAML), 0o644); err != nil {
		fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
		return exitFailure
	} else {
		fmt.Fprintf(stdout, "wrote %s\n", *out)
	}
	fmt.Fprintln(stdout, "\nwhat the proposed file would have done on this traffic:")
	rep, err := calibrate.RunFile("proposed", []byte(p.YAML), &in)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox calibrate: the proposed file does not run (a bug): %v\n", err)
		return exitFailure
	}
	rep.Print(stdout)
	if currentBytes != nil {
		fmt.Fprintf(stdout, "\nwhat %s would have done on this traffic:\n", *current)
		cur, err := calibrate.RunFile(*current, currentBytes, &in)
		if err != nil {
			fmt.Fprintf(stderr, "fusebox calibrate: %v\n", err)
			return exitFailure
		}
		cur.Print(stdout)
	}
	return exitOK
}

func readInto(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return read(f)
}

func fmtSeconds(s float64) string {
	return fmt.Sprintf("%.0fm", s/60)
}
