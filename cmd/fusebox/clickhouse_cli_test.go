package main

import (
	"context"
	"encoding/csv"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
	"github.com/fusebox-dev/fusebox/sql/reports"
)

// chArgs are the connection flags of migrate and report for the harness's
// server and database db.
func chArgs(ch *testharness.ClickHouse, db string) []string {
	args := []string{"--clickhouse", ch.Addr, "--database", db, "--user", ch.Username, "--timeout", "1m"}
	if ch.Password != "" {
		args = append(args, "--password", ch.Password)
	}
	return args
}

// migrated runs `fusebox migrate` on a fresh database and returns it.
func migrated(t *testing.T, ch *testharness.ClickHouse) string {
	t.Helper()
	db := ch.NewDatabase(t)
	code, stdout, stderr := runCmd(t, append([]string{"migrate"}, chArgs(ch, db)...)...)
	if code != exitOK {
		t.Fatalf("migrate: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	return db
}

func TestMigrateCommandTwiceIsANoOp(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t)
	args := append([]string{"migrate"}, chArgs(ch, db)...)

	code, first, stderr := runCmd(t, args...)
	if code != exitOK {
		t.Fatalf("first migrate: exit %d\nstdout: %s\nstderr: %s", code, first, stderr)
	}
	if !strings.Contains(first, "database "+db+" on "+ch.Addr) || !strings.Contains(first, "applied") ||
		!strings.Contains(first, "migration(s)") {
		t.Errorf("first migrate output lacks the database and the applied migrations:\n%s", first)
	}
	conn := ch.Conn(t)
	ctx := context.Background()
	var tables []string
	rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = ?", db)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	for _, want := range []string{clickhousesink.TableVerdicts, clickhousesink.TableFuseCommands, clickhousesink.TableMigrations} {
		if !slices.Contains(tables, want) {
			t.Errorf("after migrate, database %s has tables %v: %s missing", db, tables, want)
		}
	}
	var recorded uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+"."+clickhousesink.TableMigrations).Scan(&recorded); err != nil {
		t.Fatal(err)
	}

	code, second, stderr := runCmd(t, args...)
	if code != exitOK {
		t.Fatalf("second migrate: exit %d\nstdout: %s\nstderr: %s", code, second, stderr)
	}
	if !strings.Contains(second, "schema up to date: nothing applied") {
		t.Errorf("second migrate is not a no-op:\n%s", second)
	}
	var again uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+"."+clickhousesink.TableMigrations).Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again != recorded || recorded == 0 {
		t.Errorf("migrations recorded: %d after the first run, %d after the second; want the same, non-zero", recorded, again)
	}
}

func TestMigrateCommandUnreachableServer(t *testing.T) {
	code, _, stderr := runCmd(t, "migrate", "--clickhouse", "127.0.0.1:1", "--database", "fusebox", "--timeout", "5s")
	if code != exitFailure || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q: want %d and a message naming the address", code, stderr, exitFailure)
	}
}

// reportBlocks splits `report --format csv` output of several reports into
// the CSV block of each.
func reportBlocks(t *testing.T, out string) map[string][][]string {
	t.Helper()
	blocks := map[string][][]string{}
	for _, part := range strings.Split(out, "# report ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		recs, err := csv.NewReader(strings.NewReader(strings.TrimSpace(body))).ReadAll()
		if err != nil {
			t.Fatalf("report %s: CSV does not parse: %v\n%s", name, err, body)
		}
		blocks[name] = recs
	}
	return blocks
}

func TestReportCommandEmptyRange(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migrated(t, ch)
	rng := []string{"--from", "2025-03-04", "--to", "2025-03-05"}

	code, table, stderr := runCmd(t, append(append([]string{"report"}, chArgs(ch, db)...), rng...)...)
	if code != exitOK {
		t.Fatalf("report: exit %d\nstderr: %s", code, stderr)
	}
	for _, r := range reports.All() {
		head := "== " + r.Name + ": " + r.Title + " [2025-03-04T00:00:00Z, 2025-03-05T00:00:00Z)"
		if !strings.Contains(table, head) {
			t.Errorf("table output lacks %q:\n%s", head, table)
		}
	}

	code, out, stderr := runCmd(t, append(append([]string{"report", "--format", "csv"}, chArgs(ch, db)...), rng...)...)
	if code != exitOK {
		t.Fatalf("report csv: exit %d\nstderr: %s", code, stderr)
	}
	blocks := reportBlocks(t, out)
	for _, r := range reports.All() {
		recs, ok := blocks[r.Name]
		if !ok {
			t.Errorf("CSV output lacks report %s", r.Name)
			continue
		}
		if len(recs) != 1 || len(recs[0]) == 0 {
			t.Errorf("%s on an empty range: %d CSV records, want the header only: %v", r.Name, len(recs), recs)
		}
	}
}

func TestReportCommandWithVerdicts(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migrated(t, ch)
	hour := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	key := schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: "baseline"}
	var vs []schemas.Verdict
	for i, st := range []schemas.Status{schemas.StatusOK, schemas.StatusBreach, schemas.StatusWarn} {
		end := hour.Add(time.Duration(10*(i+1)) * time.Minute)
		v := schemas.Verdict{Processor: "tail", SLO: "chat-latency", Metric: "duration_ms", Key: key,
			WindowStartUnixNano: end.Add(-5 * time.Minute).UnixNano(), WindowEndUnixNano: end.UnixNano(),
			Value: []float64{1900, 3100, 2600}[i], Threshold: 2500, Lower: 1800, Upper: 3400, IntervalLevel: 0.95,
			Status: st, Method: "gpd_mle_profile", N: 3000, ConfigVersion: "v1"}
		v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
		vs = append(vs, v)
	}
	ctx := context.Background()
	// Written twice, as a replay would: FINAL counts each once.
	for pass := 0; pass < 2; pass++ {
		if err := clickhousesink.InsertVerdicts(ctx, ch.Conn(t), db, vs); err != nil {
			t.Fatal(err)
		}
	}
	args := append(append([]string{"report"}, chArgs(ch, db)...), "--from", "2025-03-04T00:00:00Z", "--to", "2025-03-05T00:00:00Z")

	code, table, stderr := runCmd(t, append(slices.Clone(args), "tail_p999_hourly")...)
	if code != exitOK {
		t.Fatalf("report: exit %d\nstderr: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "== tail_p999_hourly:") || !strings.HasPrefix(lines[1], "hour") {
		t.Fatalf("table: want a title, a header and one row:\n%s", table)
	}
	for _, want := range []string{"2025-03-04 10:00:00", "gpt-4o-mini", "duration_ms", "3100", "gpd_mle_profile", "breach", "acme"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("table row lacks %q:\n%s", want, table)
		}
	}

	code, out, stderr := runCmd(t, append(slices.Clone(args), "--format", "csv", "tail_p999_hourly")...)
	if code != exitOK {
		t.Fatalf("report csv: exit %d\nstderr: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v\n%s", err, out)
	}
	if len(recs) != 2 {
		t.Fatalf("CSV: %d records, want a header and one row:\n%s", len(recs), out)
	}
	row := map[string]string{}
	for i, col := range recs[0] {
		row[col] = recs[1][i]
	}
	for col, want := range map[string]string{"hour": "2025-03-04 10:00:00", "model": "gpt-4o-mini", "metric": "duration_ms",
		"evaluations": "3", "breaches": "1", "estimate": "3100", "ci_lower": "1800", "ci_upper": "3400", "budget": "2500",
		"estimate_status": "breach", "estimate_tenant": "acme"} {
		if row[col] != want {
			t.Errorf("CSV column %s = %q, want %q (row %v)", col, row[col], want, row)
		}
	}

	// The other reports run on the same data and print CSV blocks.
	code, out, stderr = runCmd(t, append(slices.Clone(args), "--format", "csv")...)
	if code != exitOK {
		t.Fatalf("report all csv: exit %d\nstderr: %s", code, stderr)
	}
	blocks := reportBlocks(t, out)
	if len(blocks) != len(reports.All()) {
		t.Errorf("%d CSV blocks, want %d:\n%s", len(blocks), len(reports.All()), out)
	}
	if recs := blocks["slo_compliance_daily"]; len(recs) < 2 {
		t.Errorf("slo_compliance_daily has no row for the verdicts:\n%s", out)
	}

	// sla_credit with the formula's flags: one slot of the three (10 min
	// apart) out, by 600 ms over 2500: 100 × (600/2500)² × 600/3600 = 0.96.
	code, out, stderr = runCmd(t, append(slices.Clone(args), "--format", "csv", "sla_credit", "--credit-base", "100")...)
	if code != exitOK {
		t.Fatalf("report sla_credit: exit %d\nstderr: %s", code, stderr)
	}
	recs, err = csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("sla_credit CSV: %v, want a header and one row:\n%s", err, out)
	}
	row = map[string]string{}
	for i, col := range recs[0] {
		row[col] = recs[1][i]
	}
	for col, want := range map[string]float64{"step_s": 600, "evaluated_minutes": 30, "minutes_out": 10, "max_overrun_ratio": 0.24, "credit": 0.96} {
		got, err := strconv.ParseFloat(row[col], 64)
		if err != nil || math.Abs(got-want) > 1e-9 {
			t.Errorf("sla_credit %s = %q, want %v (row %v)", col, row[col], want, row)
		}
	}
}
