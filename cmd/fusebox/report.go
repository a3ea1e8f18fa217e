package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/sql/reports"
)

const reportDescription = `Runs fusebox's reporting SQL (sql/reports/*.sql) on ClickHouse for the
event-time range [--from, --to) and prints each report as a table or CSV.
Without report names it prints all of them, in this order:
  %s
Times are RFC 3339 (2025-03-04T10:00:00Z), a UTC date (2025-03-04), or
"now" with an optional offset (now-24h, now-1d, now-90m, now-1w). With several reports and
--format csv, each CSV block is preceded by a line "# report NAME" and
followed by an empty line.

Examples:
  fusebox report --clickhouse 127.0.0.1:9000 --database fusebox --from now-24h
  fusebox report --database fusebox --from 2025-03-01 --to 2025-03-08 \
      --format csv error_budget --objective 0.995
  fusebox report --database fusebox --from 2025-03-01 --to 2025-04-01 \
      sla_credit --credit-base 25 --credit-exponent 2 --credit-cap 500`

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var ch clickhouseFlags
	rargs := reports.DefaultArgs()
	var fromS, toS, format string
	fs := newFlagSet("report", "--clickhouse HOST:PORT --database DB [--from T] [--to T] [--format table|csv] [REPORT...]",
		fmt.Sprintf(reportDescription, strings.Join(reports.Names(), "\n  ")), stdout)
	ch.register(fs)
	fs.StringVar(&fromS, "from", "now-24h", "range start `time` (inclusive): RFC 3339, a date, now or now-DURATION (now-1d)")
	fs.StringVar(&toS, "to", "now", "range end `time` (exclusive)")
	fs.StringVar(&format, "format", "table", "output `format`: table or csv")
	fs.Float64Var(&rargs.Objective, "objective", rargs.Objective, "objective of error_budget (share of calls) and tenant_slo_health (share of evaluated minutes), in (0, 1)")
	fs.Float64Var(&rargs.CreditBase, "credit-base", rargs.CreditBase, "sla_credit: credit per hour out of objective at an overrun of once the threshold, >= 0")
	fs.Float64Var(&rargs.CreditExponent, "credit-exponent", rargs.CreditExponent, "sla_credit: exponent of overrun ÷ threshold (0 flat, 1 linear, 2 proportional-squared), >= 0")
	fs.Float64Var(&rargs.CreditCap, "credit-cap", rargs.CreditCap, "sla_credit: the most credit per tenant and SLO over the range, 0 for no cap")
	fs.IntVar(&rargs.Limit, "limit", rargs.Limit, "rows of drift_top")
	fs.StringVar(&rargs.Target, "target", "", "only this fuse target (tenant/service/model/variant) in fuse_timeline")

	names, code, done := parseInterleaved(fs, args, stderr)
	if done {
		return code
	}
	now := time.Now().UTC()
	var err error
	if rargs.From, err = parseTimeArg(fromS, now); err != nil {
		return reportUsage(stderr, fmt.Errorf("--from: %w", err))
	}
	if rargs.To, err = parseTimeArg(toS, now); err != nil {
		return reportUsage(stderr, fmt.Errorf("--to: %w", err))
	}
	if format != "table" && format != "csv" {
		return reportUsage(stderr, fmt.Errorf("--format %q: want table or csv", format))
	}
	selected := reports.All()
	if len(names) > 0 {
		selected = nil
		for _, n := range names {
			r, ok := reports.Lookup(n)
			if !ok {
				return reportUsage(stderr, fmt.Errorf("unknown report %q; reports: %s", n, strings.Join(reports.Names(), ", ")))
			}
			selected = append(selected, r)
		}
	}
	for _, r := range selected {
		if err := rargs.Validate(r); err != nil {
			return reportUsage(stderr, err)
		}
	}
	cfg, err := ch.config()
	if err != nil {
		return reportUsage(stderr, err)
	}

	ctx, cancel := context.WithTimeout(ctx, ch.timeout)
	defer cancel()
	conn, err := ch.open(ctx, cfg, cfg.Database)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox report: %v\n", err)
		return exitFailure
	}
	defer conn.Close()
	failed := false
	for i, r := range selected {
		tab, err := r.Run(ctx, conn, rargs)
		if err != nil {
			fmt.Fprintf(stderr, "fusebox report: %v\n", err)
			failed = true
			continue
		}
		switch {
		case format == "csv" && len(selected) > 1:
			fmt.Fprintf(stdout, "# report %s\n", r.Name)
			err = tab.WriteCSV(stdout)
			fmt.Fprintln(stdout)
		case format == "csv":
			err = tab.WriteCSV(stdout)
		default:
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "== %s: %s [%s, %s)\n", r.Name, r.Title,
				rargs.From.Format(time.RFC3339), rargs.To.Format(time.RFC3339))
			err = tab.WriteText(stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "fusebox report: write %s: %v\n", r.Name, err)
			return exitFailure
		}
	}
	if failed {
		return exitFailure
	}
	return exitOK
}

func reportUsage(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "fusebox report: %v; see fusebox report -h\n", err)
	return exitUsage
}

// parseInterleaved parses flags that may come before, between or after the
// positional report names and returns the names.
func parseInterleaved(fs *flag.FlagSet, args []string, stderr io.Writer) (names []string, code int, done bool) {
	for {
		if code, done := parseArgs(fs, args, stderr); done {
			return nil, code, true
		}
		args = fs.Args()
		if len(args) == 0 {
			return names, exitOK, false
		}
		names = append(names, args[0])
		args = args[1:]
	}
}
