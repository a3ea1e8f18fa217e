package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

const configDescription = `Works with SLO files. Subcommands:

  check FILE   load FILE as "fusebox run --config FILE" would and build its
               processors and breaker; print "ok" and one line per SLO, or
               every problem as FILE:LINE: FIELD: REASON. Exit 1 on errors.
               It does not connect to Kafka or ClickHouse, nor read keys.`

// cmdConfig dispatches `fusebox config SUBCOMMAND`.
func cmdConfig(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config", "check FILE", configDescription, stderr)
	if len(args) == 0 {
		fmt.Fprintln(stderr, "fusebox config: name a subcommand: check FILE")
		fs.Usage()
		return exitUsage
	}
	switch args[0] {
	case "check":
		return cmdConfigCheck(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fs.Usage()
		return exitOK
	}
	fmt.Fprintf(stderr, "fusebox config: unknown subcommand %q\n", args[0])
	fs.Usage()
	return exitUsage
}

func cmdConfigCheck(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config check", "FILE", "Loads and checks the SLO file FILE; see `fusebox config -h`.", stderr)
	// FILE may come before or after flags; there are none besides -h.
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "fusebox config check: give exactly one FILE")
		fs.Usage()
		return exitUsage
	}
	path := fs.Arg(0)
	f, err := config.Load(path)
	if err != nil {
		printConfigErrors(stderr, "fusebox config check", path, err)
		return exitFailure
	}
	if _, err := pipeline.WorkerConfig(f); err != nil {
		fmt.Fprintf(stderr, "fusebox config check: %s: %v\n", path, err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "ok: %s: config version %s, %d SLO(s), sinks %s\n", path, f.Version, len(f.SLOs), sinkNames(f))
	for _, s := range f.SLOs {
		fmt.Fprintf(stdout, "  slo %s: %s%s\n", s.Name, sloSummary(&s), matchSummary(s.Match))
	}
	fmt.Fprintf(stdout, "  breaker: %s\n", breakerSummary(&f.Breaker))
	return exitOK
}

// sloSummary says in one line what an SLO checks.
func sloSummary(s *config.SLO) string {
	if sec, ok := s.Processor(); ok {
		return sec.Kind.Summary(sec.Config)
	}
	return "no processor"
}

func matchSummary(m schemas.Match) string {
	var parts []string
	for _, d := range []struct {
		name string
		vals []string
	}{{"tenant", m.Tenant}, {"service", m.Service}, {"model", m.Model}, {"variant", m.Variant}} {
		if len(d.vals) > 0 {
			parts = append(parts, d.name+" in ["+strings.Join(d.vals, " ")+"]")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; only " + strings.Join(parts, ", ")
}

func breakerSummary(b *config.Breaker) string {
	var rules []string
	for _, r := range b.Rules {
		s := r.Processor
		if r.SLO != "" {
			s += "/" + r.SLO
		}
		if r.Metric != "" {
			s += "/" + r.Metric
		}
		s += "→" + string(r.Action)
		if r.Fallback != "" {
			s += "(" + r.Fallback + ")"
		}
		if r.ThrottleFraction > 0 {
			s += "(" + strconv.FormatFloat(r.ThrottleFraction, 'g', -1, 64) + ")"
		}
		rules = append(rules, s)
	}
	if len(rules) == 0 {
		rules = []string{"none (no commands are ever issued)"}
	}
	return fmt.Sprintf("trip on %d of the last %d evaluations, target [%s], cool-down %v (x%g up to %v), close after %d ok; rules %s",
		b.K, b.N, strings.Join(b.Target, " "), b.CoolDown, b.BackoffFactor, b.MaxCoolDown, b.CloseAfter, strings.Join(rules, ", "))
}
