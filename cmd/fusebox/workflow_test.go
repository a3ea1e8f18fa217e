package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// TestKafkaReadmeWorkflowGenRunReport runs the docs' workflow as written —
// `fusebox run` with a ClickHouse sink, `fusebox gen --speedup N --scenario
// examples/scenario.yaml` with its default start, then `fusebox report NAME
// --to now` — and checks that the report shows the run's evaluations. It
// failed when gen's event time started at the wall clock and ran ahead of
// it: every verdict's window_end was later than "now" (and the router
// dead-lettered spans beyond max_future_skew), so the report was empty.
// 10 minutes of event time at 30x: about 20 s of wall time.
func TestKafkaReadmeWorkflowGenRunReport(t *testing.T) {
	k := testharness.StartBroker(t)
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "fusebox.yaml", runConfig(k.Brokers, fmt.Sprintf(
		"http: {listen: 127.0.0.1:0}\nsinks: {clickhouse: {addr: [%s], database: %s, username: %q, password: %q, flush_every: 200ms, dial_timeout: 2s}}\n",
		ch.Addr, db, ch.Username, ch.Password)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs, addr, done := startRun(t, ctx, "--config", cfg, "--fuse-keys", testKeyFile(t, dir))

	genStart := time.Now()
	code, stdout, stderr := runCmd(t, "gen", "--brokers", k.Brokers[0], "--rate", "60", "--duration", "10m",
		"--speedup", "30", "--scenario", filepath.Join("..", "..", "examples", "scenario.yaml"), "--progress-every", "0")
	if code != exitOK {
		t.Fatalf("gen: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`event time (\S+) to (\S+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("gen printed no event-time range: %q", stdout)
	}
	if end, err := time.Parse(time.RFC3339, m[2]); err != nil || end.After(time.Now().Add(time.Second)) || end.Before(genStart) {
		t.Errorf("gen's event time ended at %s (%v); want it at the wall clock of gen's end", m[2], err)
	}

	// The report as docs/verdicts.md shows it (the reports' own --from default,
	// now-24h, covers the run), polled until the sink has flushed.
	args := append(append([]string{"report"}, chArgs(ch, db)...), "--to", "now", "--format", "csv", "slo_compliance_daily")
	var rows []map[string]string
	testharness.Eventually(t, 60*time.Second, "slo_compliance_daily rows for the generated traffic", func() bool {
		code, out, errs := runCmd(t, args...)
		if code != exitOK {
			t.Fatalf("report: exit %d\nstderr: %s", code, errs)
		}
		rows = reportRows(t, out)
		return len(rows) > 0
	})
	slos := map[string]bool{}
	for _, r := range rows {
		slos[r["slo"]] = true
		if r["evaluations"] == "0" || r["evaluations"] == "" {
			t.Errorf("report row without evaluations: %v", r)
		}
	}
	if !slos["availability"] || !slos["latency"] {
		t.Errorf("report covers SLOs %v; want availability and latency", slos)
	}

	// Nothing was refused as being from the future: gen's default start
	// keeps event time behind the wall clock.
	if v := scrape(t, addr)[`fusebox_dlq_records_total{kind="future_event_time"}`]; v != 0 {
		t.Errorf("%v records dead-lettered as future_event_time; want none", v)
	}
	cancel()
	select {
	case c := <-done:
		if c != exitOK {
			t.Errorf("run exited %d; stderr:\n%s", c, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not stop")
	}
}

// reportRows reads the CSV of one report into rows keyed by column.
func reportRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("report CSV does not parse: %v\n%s", err, out)
	}
	if len(recs) == 0 {
		t.Fatalf("report printed no CSV header:\n%s", out)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, col := range recs[0] {
			row[col] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}
