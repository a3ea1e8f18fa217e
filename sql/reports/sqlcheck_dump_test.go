package reports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
	"github.com/fusebox-dev/fusebox/sql/reports"
)

// envSQLCheckDump names the file TestDumpForCurrentEngine writes: the
// migrations, the sample rows and every report's result on this test's
// ClickHouse (18.16 here), which testing/sqlcheck/fusebox_sqlcheck replays
// on a current engine (chDB) and compares. scripts/test sets it.
const envSQLCheckDump = "FUSEBOX_SQLCHECK_DUMP"

// sqlcheckDump is the file's layout (testing/sqlcheck/fusebox_sqlcheck/dump.py
// reads it).
type sqlcheckDump struct {
	Server        string               `json:"server"`
	RetentionDays int                  `json:"default_retention_days"`
	Migrations    []dumpMigration      `json:"migrations"`
	Tables        map[string]dumpTable `json:"tables"` // insert these rows, in this order of tables
	Order         []string             `json:"order"`
	Params        map[string]any       `json:"params"`
	Reports       []dumpReport         `json:"reports"`
	// HandParams and HandReports: tenant_slo_health and sla_credit over the
	// hand fixture (tenant_reports_test.go), whose values the pytest also
	// checks against the numbers computed by hand.
	HandParams  []map[string]any `json:"hand_params"`
	HandReports []dumpReport     `json:"hand_reports"`
}

type dumpMigration struct {
	Version    uint32   `json:"version"`
	Name       string   `json:"name"`
	MinServer  string   `json:"min_server"`
	Applied    bool     `json:"applied_here"` // false: skipped on this server
	Statements []string `json:"statements"`   // {db} and {days} left in; {levels} expanded
}

type dumpTable struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

type dumpReport struct {
	Name    string   `json:"name"`
	SQL     string   `json:"sql"`
	Columns []string `json:"columns"`
	Types   []string `json:"types"`
	Rows    [][]any  `json:"rows"`
}

// TestDumpForCurrentEngine loads the report tests' fixtures (migrations,
// then the verdicts, rollups and commands inserted twice) into the
// harness's ClickHouse, runs every report, and writes what a current
// engine needs to do the same and compare: the migration statements
// (including the steps this server skips), the rows as inserted (rollups as
// their input rows: span_rollups holds aggregate states), the parameters
// and each report's result. The file is written when FUSEBOX_SQLCHECK_DUMP
// names it.
func TestDumpForCurrentEngine(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	f := makeFixtures(rand.New(rand.NewPCG(7, 11)))
	conn := load(t, ch, f)
	ctx := context.Background()
	admin := ch.Conn(t)

	d := sqlcheckDump{Server: ch.ServerVersion, Tables: map[string]dumpTable{}}
	server, err := clickhousesink.ParseServerVersion(ch.ServerVersion)
	if err != nil {
		t.Fatal(err)
	}
	// {days} stays: the replay picks the retention (the fixtures are older
	// than the default 90 days, which a server with TTL drops on insert).
	expand := strings.NewReplacer("{levels}", clickhousesink.QuantileLevelsSQL)
	d.RetentionDays = clickhousesink.DefaultMigrateConfig().RollupRetentionDays
	for _, m := range clickhousesink.Migrations {
		dm := dumpMigration{Version: m.Version, Name: m.Name, MinServer: m.MinServer.String(), Applied: server.AtLeast(m.MinServer)}
		// The step's added columns come first, as Migrate runs them (the
		// replay's database is new, so each is added unconditionally).
		for _, c := range m.Columns {
			dm.Statements = append(dm.Statements, expand.Replace("ALTER TABLE {db}."+c.Table+" ADD COLUMN "+c.Column+" "+c.Type))
		}
		for _, s := range m.Statements {
			dm.Statements = append(dm.Statements, expand.Replace(s))
		}
		d.Migrations = append(d.Migrations, dm)
	}

	// The rollups' input rows: span_rollups_input is a Null table, so they
	// are inserted once more into a Memory table of the same columns.
	scratch := ch.NewDatabase(t)
	var create string
	if err := conn.QueryRow(ctx, "SHOW CREATE TABLE span_rollups_input").Scan(&create); err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(create, "(")
	body = body[:strings.LastIndex(body, ")")]
	if err := admin.Exec(ctx, "CREATE TABLE "+scratch+".span_rollups_input ("+body+") ENGINE = Memory"); err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < 2; pass++ {
		if err := clickhousesink.InsertRollups(ctx, admin, scratch, f.rollups); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range []struct{ name, from string }{
		{"verdicts", "verdicts"}, {"fuse_commands", "fuse_commands"}, {"span_rollups_input", scratch + ".span_rollups_input"},
	} {
		tab, err := reports.Report{Name: tb.name, SQL: "SELECT * FROM " + tb.from}.Run(ctx, conn, reports.DefaultArgs())
		if err != nil {
			t.Fatal(err)
		}
		d.Tables[tb.name] = dumpTable{Columns: tab.Columns, Rows: jsonRows(t, tab.Types, tab.Rows)}
		d.Order = append(d.Order, tb.name)
	}

	args := reports.DefaultArgs()
	args.From, args.To, args.Limit = from, to, 5
	d.Params = dumpParams(args)
	for _, r := range reports.All() {
		tab := run(t, conn, r, args)
		if len(tab.Rows) == 0 {
			t.Fatalf("%s: no rows from the fixtures: nothing to compare", r.Name)
		}
		d.Reports = append(d.Reports, dumpReport{Name: r.Name, SQL: r.SQL, Columns: tab.Columns, Types: tab.Types, Rows: jsonRows(t, tab.Types, tab.Rows)})
	}
	// The hand fixture: the defaults' formula, then exponent 1 with a cap.
	hand := handArgs()
	linear := hand
	linear.CreditExponent, linear.CreditCap = 1, 0.4
	for _, a := range []reports.Args{hand, linear} {
		for _, r := range []reports.Report{reports.TenantSLOHealth, reports.SLACredit} {
			tab := run(t, conn, r, a)
			d.HandParams = append(d.HandParams, dumpParams(a))
			d.HandReports = append(d.HandReports, dumpReport{Name: r.Name, SQL: r.SQL, Columns: tab.Columns, Types: tab.Types, Rows: jsonRows(t, tab.Types, tab.Rows)})
		}
	}
	b, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := os.Getenv(envSQLCheckDump)
	if path == "" {
		t.Logf("%d migrations, %d tables, %d reports (%d bytes); set %s to write them", len(d.Migrations), len(d.Tables), len(d.Reports), len(b), envSQLCheckDump)
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: ClickHouse %s, %d reports", path, d.Server, len(d.Reports))
}

// dumpParams are a's values by parameter name, as the pytest binds them.
func dumpParams(a reports.Args) map[string]any {
	return map[string]any{"from": a.From.Unix(), "to": a.To.Unix(), "objective": a.Objective, "limit": a.Limit, "target": a.Target,
		"credit_base": a.CreditBase, "credit_exponent": a.CreditExponent, "credit_cap": a.CreditCap}
}

// jsonRows turns scanned values into JSON values ClickHouse's JSONEachRow
// input and JSON output agree on: Date columns as "YYYY-MM-DD", times as
// "YYYY-MM-DD hh:mm:ss[.fffffffff]" UTC; non-finite floats fail the test
// (JSON has none).
func jsonRows(t *testing.T, types []string, rows [][]any) [][]any {
	t.Helper()
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = make([]any, len(r))
		for j, v := range r {
			switch x := v.(type) {
			case time.Time:
				if types[j] == "Date" || types[j] == "Date32" {
					out[i][j] = x.UTC().Format("2006-01-02")
				} else {
					out[i][j] = x.UTC().Format("2006-01-02 15:04:05.999999999")
				}
			case float64:
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("row %d column %d: %v has no JSON form", i, j, x)
				}
				out[i][j] = x
			case float32, int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, uint, string, bool, []string, []float64, nil:
				out[i][j] = x
			default:
				out[i][j] = fmt.Sprint(x)
			}
		}
	}
	return out
}
