package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
)

// The dashboard and the data source the provisioning files declare.
const (
	dashboardPath  = "grafana/fusebox.json"
	datasourcePath = "grafana/provisioning/datasources/clickhouse.yaml"
	dashboardsPath = "grafana/provisioning/dashboards/fusebox.yaml"
	chPluginType   = "grafana-clickhouse-datasource"
	chPluginUID    = "fusebox-clickhouse"
)

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboard struct {
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Datasource *dsRef `json:"datasource"`
			Query      any    `json:"query"`
			Current    struct {
				Value any `json:"value"`
			} `json:"current"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource *dsRef `json:"datasource"`
		GridPos    struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []struct {
			RefID      string `json:"refId"`
			Datasource *dsRef `json:"datasource"`
			EditorType string `json:"editorType"`
			QueryType  string `json:"queryType"`
			Format     *int   `json:"format"`
			RawSQL     string `json:"rawSql"`
		} `json:"targets"`
	} `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// grafanaRange is the dashboard time range the queries are expanded for:
// the sample data's day, in one-hour buckets.
type grafanaRange struct {
	From, To time.Time
	Interval time.Duration
}

var (
	macroTimeFilter = regexp.MustCompile(`\$__timeFilter\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)`)
	dashVar         = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
)

// expandMacros does what grafana-clickhouse-datasource (v4, pkg/macros)
// does to the macros the dashboard uses, and what Grafana does to its
// variables:
//
//	$__timeFilter(c)  c >= toDateTime(from) AND c <= toDateTime(to)   (Unix seconds)
//	$__fromTime       toDateTime(from)
//	$__toTime         toDateTime(to)
//	$__interval_s     the panel's interval in whole seconds, at least 1
//	${v}, $v          the variable's value, as text
//
// Any other $__ macro, or an unknown variable, is an error: the test must
// learn it before the dashboard may use it.
func expandMacros(sql string, r grafanaRange, vars map[string]string) (string, error) {
	from, to := strconv.FormatInt(r.From.Unix(), 10), strconv.FormatInt(r.To.Unix(), 10)
	sql = macroTimeFilter.ReplaceAllString(sql, "$1 >= toDateTime("+from+") AND $1 <= toDateTime("+to+")")
	sql = strings.NewReplacer(
		"$__fromTime", "toDateTime("+from+")",
		"$__toTime", "toDateTime("+to+")",
		"$__interval_s", strconv.Itoa(max(int(r.Interval.Seconds()), 1)),
	).Replace(sql)
	if i := strings.Index(sql, "$__"); i >= 0 {
		end := min(len(sql), i+20)
		return "", fmt.Errorf("macro %q not known to the test", sql[i:end])
	}
	var err error
	sql = dashVar.ReplaceAllStringFunc(sql, func(m string) string {
		sub := dashVar.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		v, ok := vars[name]
		if !ok {
			err = fmt.Errorf("variable $%s has no value", name)
		}
		return v
	})
	return sql, err
}

// queryResult is one executed query: column names and rows.
type queryResult struct {
	Columns []string
	Rows    [][]any
}

func execQuery(ctx context.Context, conn driver.Conn, sql string) (*queryResult, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cts := rows.ColumnTypes()
	res := &queryResult{Columns: rows.Columns()}
	for rows.Next() {
		dest := make([]any, len(cts))
		for i, ct := range cts {
			dest[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		row := make([]any, len(dest))
		for i, d := range dest {
			row[i] = reflect.ValueOf(d).Elem().Interface()
		}
		res.Rows = append(res.Rows, row)
	}
	return res, rows.Err()
}

func num(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	}
	return 0, false
}

// grafanaFixtures is a day of verdicts, rollups and fuse commands, with rows
// an hour either side of it that no panel may show.
type grafanaFixtures struct {
	verdicts []schemas.Verdict
	rollups  []schemas.Rollup
	commands []schemas.FuseCommand
}

func makeGrafanaFixtures(r grafanaRange) grafanaFixtures {
	var f grafanaFixtures
	keys := []schemas.Key{
		{Tenant: "t1", Service: "chat", Model: "m0", Variant: "baseline"},
		{Tenant: "t1", Service: "chat", Model: "m0", Variant: "canary"},
		{Tenant: "t2", Service: "search", Model: "m1", Variant: "baseline"},
	}
	statuses := []schemas.Status{schemas.StatusOK, schemas.StatusWarn, schemas.StatusOK, schemas.StatusBreach, schemas.StatusInsufficientData}
	i := 0
	for end := r.From.Add(-time.Hour); end.Before(r.To.Add(time.Hour)); end = end.Add(10 * time.Minute) {
		for _, k := range keys {
			for _, p := range []struct{ proc, slo, metric string }{
				{"tail", "latency", "duration_ms"}, {"tail", "latency", "ttft_ms"}, {"burnrate", "availability", "burn_rate_1h"},
			} {
				i++
				st := statuses[i%len(statuses)]
				v := schemas.Verdict{Processor: p.proc, SLO: p.slo, Metric: p.metric, Key: k,
					WindowStartUnixNano: end.Add(-time.Hour).UnixNano(), WindowEndUnixNano: end.UnixNano(),
					Status: st, Method: "m_" + p.proc, ConfigVersion: "v1", Threshold: 800}
				if st != schemas.StatusInsufficientData {
					v.Value = float64(300 + 37*(i%13))
					v.Lower, v.Upper, v.IntervalLevel, v.N = v.Value-25, v.Value+40, 0.95, 5000
				}
				v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
				f.verdicts = append(f.verdicts, v)
			}
		}
	}
	j := 0
	for m := r.From.Add(-time.Hour); m.Before(r.To.Add(time.Hour)); m = m.Add(time.Minute) {
		for _, k := range keys {
			j++
			n := int64(20 + j%17)
			ro := schemas.Rollup{Key: k, MinuteUnixNano: m.UnixNano(), N: n, Errors: int64(j % 3), Corrections: int64(j % 5)}
			for x := int64(0); x < n; x++ {
				ro.DurationsMs = append(ro.DurationsMs, float64(100+x))
			}
			f.rollups = append(f.rollups, ro)
		}
	}
	actions := []schemas.Action{schemas.ActionTrip, schemas.ActionHalfOpen, schemas.ActionClose, schemas.ActionDegrade, schemas.ActionClose}
	for ti, target := range []schemas.Key{keys[1], {Tenant: "t2", Service: "*", Model: "m1", Variant: "*"}} {
		for v := uint64(1); v <= uint64(len(actions)); v++ {
			issued := r.From.Add(-30*time.Minute + time.Duration(v-1)*5*time.Hour + time.Duration(ti)*time.Minute)
			f.commands = append(f.commands, schemas.FuseCommand{Target: target, Action: actions[v-1], Level: int(v % 3),
				State: schemas.StateOpen, Version: v, IssuedAtUnixNano: issued.UnixNano(),
				ExpiresAtUnixNano: issued.Add(15 * time.Minute).UnixNano(), Fallback: "m-small",
				Reasons: []schemas.Reason{{VerdictID: fmt.Sprintf("v%d-%d", ti, v), Text: "r"}}, KeyID: "k1",
				Signature: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"})
		}
	}
	return f
}

// panelQuery names a query by panel title and refId.
type panelQuery struct{ panel, ref string }

// wantColumns are the columns each query of the dashboard must return, in
// order. A query of the dashboard missing here fails the test, so a new
// panel comes with its expectation.
var wantColumns = map[panelQuery][]string{
	{"P99.9 of $metric for $model, with its 95% band, against the budget", "A"}: {"time", "p999", "ci_lower", "ci_upper", "budget"},
	{"SLO compliance", "A"}:                                                      {"time", "slo", "compliance"},
	{"SLO compliance over the range", "A"}:                                       {"slo", "model", "ok_evaluations", "warn_evaluations", "breach_evaluations", "insufficient_evaluations", "evaluations", "compliance"},
	{"Error budget remaining (objective $objective)", "A"}:                       {"tenant", "service", "model", "total_spans", "total_errors", "error_rate", "budget_errors", "budget_remaining"},
	{"Error budget burn rate (objective $objective)", "A"}:                       {"time", "service", "burn_rate"},
	{"Fuse timeline", "A"}:                                                       {"time", "target", "action"},
	{"Fuse commands", "A"}:                                                       {"issued_at", "target", "version", "action", "level", "state", "expires_at", "fallback", "throttle_fraction", "reason_verdict_ids", "key_id"},
	{"Correction rate by variant", "A"}:                                          {"time", "model_variant", "correction_rate"},
	{"Correction rate by variant over the range, with 95% Wilson interval", "A"}: {"model", "variant", "responses", "corrected", "rate", "rate_lower", "rate_upper"},
	{"$model", "variable"}:                                                       {"model"},
	{"$metric", "variable"}:                                                      {"metric"},
}

// TestGrafanaDashboardQueries executes every query of the dashboard — the
// panels' and the variables' — against ClickHouse (18.16 in the harness)
// with the migrations applied and a day of sample rows inserted twice (a
// replay, which FINAL must hide), after expanding the macros as the data
// source plugin does. Each must return its expected columns and rows, every
// number finite; time-series queries lead with a DateTime "time" column.
func TestGrafanaDashboardQueries(t *testing.T) {
	d := loadDashboard(t)
	ch := testharness.StartClickHouse(t)
	ctx := context.Background()
	db := ch.NewDatabase(t)
	admin := ch.Conn(t)
	if _, err := clickhousesink.Migrate(ctx, admin, db); err != nil {
		t.Fatal(err)
	}
	r := grafanaRange{From: time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC), Interval: time.Hour}
	r.To = r.From.Add(24 * time.Hour)
	f := makeGrafanaFixtures(r)
	for pass := 0; pass < 2; pass++ {
		if err := clickhousesink.InsertVerdicts(ctx, admin, db, f.verdicts); err != nil {
			t.Fatal(err)
		}
		if err := clickhousesink.InsertRollups(ctx, admin, db, f.rollups); err != nil {
			t.Fatal(err)
		}
		if err := clickhousesink.InsertCommands(ctx, admin, db, f.commands); err != nil {
			t.Fatal(err)
		}
	}
	conn := ch.ConnDatabase(t, db)
	if v, err := clickhousesink.QueryServerVersion(ctx, conn); err == nil {
		t.Logf("ClickHouse %s", v)
	}
	seen := map[panelQuery]bool{}

	// Variables first, in order: a later one's query may use an earlier
	// one's value (Grafana picks the first option when none is current).
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		switch v.Type {
		case "custom":
			cur, ok := v.Current.Value.(string)
			if !ok || cur == "" {
				t.Fatalf("variable %s: no current value", v.Name)
			}
			vars[v.Name] = cur
		case "query":
			sql, ok := v.Query.(string)
			if !ok {
				t.Fatalf("variable %s: query %v is not SQL text", v.Name, v.Query)
			}
			if v.Datasource == nil || v.Datasource.UID != chPluginUID {
				t.Errorf("variable %s: data source %+v, want uid %s", v.Name, v.Datasource, chPluginUID)
			}
			pq := panelQuery{"$" + v.Name, "variable"}
			res := runDashboardQuery(t, ctx, conn, pq, sql, r, vars, false)
			seen[pq] = true
			if res == nil || len(res.Rows) == 0 {
				t.Fatalf("variable %s: no values", v.Name)
			}
			vars[v.Name] = fmt.Sprint(res.Rows[0][0])
		default:
			t.Fatalf("variable %s: type %s not known to the test", v.Name, v.Type)
		}
	}
	if vars["model"] != "m0" || vars["metric"] != "duration_ms" {
		t.Errorf("variables model=%q metric=%q, want the sample data's first: m0, duration_ms", vars["model"], vars["metric"])
	}

	results := map[string]*queryResult{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside Grafana's 24 columns", p.Title, g)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			pq := panelQuery{p.Title, q.RefID}
			if seen[pq] {
				t.Errorf("panel %q: two queries %s", p.Title, q.RefID)
			}
			seen[pq] = true
			for _, ds := range []*dsRef{p.Datasource, q.Datasource} {
				if ds == nil || ds.Type != chPluginType || ds.UID != chPluginUID {
					t.Errorf("panel %q query %s: data source %+v, want %s uid %s", p.Title, q.RefID, ds, chPluginType, chPluginUID)
				}
			}
			if q.EditorType != "sql" || q.Format == nil {
				t.Errorf("panel %q query %s: editorType %q format %v, want sql with a format", p.Title, q.RefID, q.EditorType, q.Format)
			}
			ts := q.QueryType == "timeSeries"
			if ts != (q.Format != nil && *q.Format == 0) {
				t.Errorf("panel %q query %s: queryType %s with format %v", p.Title, q.RefID, q.QueryType, q.Format)
			}
			results[p.Title] = runDashboardQuery(t, ctx, conn, pq, q.RawSQL, r, vars, ts)
		}
	}
	for pq := range wantColumns {
		if !seen[pq] {
			t.Errorf("expected query %v is not in the dashboard", pq)
		}
	}

	// A few values checked against the sample data.
	var spans, commands, inBand int64
	for _, ro := range f.rollups {
		if m := time.Unix(0, ro.MinuteUnixNano); !m.Before(r.From) && !m.After(r.To) {
			spans += ro.N
		}
	}
	for _, c := range f.commands {
		if is := time.Unix(0, c.IssuedAtUnixNano); !is.Before(r.From) && !is.After(r.To) {
			commands++
		}
	}
	if res := results["Error budget remaining (objective $objective)"]; res != nil {
		var got float64
		for _, row := range res.Rows {
			v, _ := num(row[3])
			got += v
		}
		if int64(got) != spans {
			t.Errorf("error budget: %v spans in total, want %d (each minute once despite the replay)", got, spans)
		}
	}
	if res := results["Fuse commands"]; res != nil && int64(len(res.Rows)) != commands {
		t.Errorf("fuse commands: %d rows, want %d", len(res.Rows), commands)
	}
	if res := results["P99.9 of $metric for $model, with its 95% band, against the budget"]; res != nil {
		for _, row := range res.Rows {
			est, _ := num(row[1])
			lo, _ := num(row[2])
			hi, _ := num(row[3])
			if lo <= est && est <= hi {
				inBand++
			} else {
				t.Errorf("P99.9 row %v: estimate outside its band", row)
			}
		}
		// One bucket per hour of the range, both ends included by
		// $__timeFilter: 25.
		if len(res.Rows) != 25 {
			t.Errorf("P99.9: %d hourly buckets, want 25", len(res.Rows))
		}
	}
}

func runDashboardQuery(t *testing.T, ctx context.Context, conn driver.Conn, pq panelQuery, raw string, r grafanaRange, vars map[string]string, timeSeries bool) *queryResult {
	t.Helper()
	want, ok := wantColumns[pq]
	if !ok {
		t.Errorf("query %v: no expected columns in wantColumns", pq)
	}
	sql, err := expandMacros(raw, r, vars)
	if err != nil {
		t.Errorf("query %v: %v", pq, err)
		return nil
	}
	res, err := execQuery(ctx, conn, sql)
	if err != nil {
		t.Errorf("query %v: %v\n%s", pq, err, sql)
		return nil
	}
	if ok && !slices.Equal(res.Columns, want) {
		t.Errorf("query %v: columns %v, want %v", pq, res.Columns, want)
	}
	if len(res.Rows) == 0 {
		t.Errorf("query %v: no rows for the sample data\n%s", pq, sql)
	}
	for _, row := range res.Rows {
		for i, v := range row {
			if f, ok := num(v); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				t.Errorf("query %v: column %s is %v in row %v", pq, res.Columns[i], f, row)
			}
		}
		if timeSeries {
			tm, ok := row[0].(time.Time)
			if res.Columns[0] != "time" || !ok {
				t.Errorf("query %v: time series whose first column is %s (%T), want time (DateTime)", pq, res.Columns[0], row[0])
				break
			}
			if tm.Before(r.From) || tm.After(r.To) {
				t.Errorf("query %v: time %v outside the range [%v, %v]", pq, tm, r.From, r.To)
			}
		}
	}
	t.Logf("query %v: %d rows", pq, len(res.Rows))
	return res
}

// TestGrafanaProvisioning checks that the provisioned data source reaches
// the compose ClickHouse with its database and user, under the uid the
// dashboard's queries name, and that the dashboard directory is mounted.
func TestGrafanaProvisioning(t *testing.T) {
	c := loadCompose(t)
	var dsFile struct {
		Datasources []struct {
			Name     string `yaml:"name"`
			Type     string `yaml:"type"`
			UID      string `yaml:"uid"`
			JSONData struct {
				Host            string `yaml:"host"`
				Port            int    `yaml:"port"`
				Protocol        string `yaml:"protocol"`
				Username        string `yaml:"username"`
				DefaultDatabase string `yaml:"defaultDatabase"`
			} `yaml:"jsonData"`
			Secure struct {
				Password string `yaml:"password"`
			} `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	loadYAML(t, datasourcePath, &dsFile)
	if len(dsFile.Datasources) != 1 {
		t.Fatalf("%s: %d data sources, want 1", datasourcePath, len(dsFile.Datasources))
	}
	ds := dsFile.Datasources[0]
	chEnv := c.Services["clickhouse"].Environment
	if ds.Type != chPluginType || ds.UID != chPluginUID {
		t.Errorf("data source type %s uid %s, want %s %s", ds.Type, ds.UID, chPluginType, chPluginUID)
	}
	if ds.JSONData.Host != c.Services["clickhouse"].Hostname || ds.JSONData.Port != 9000 || ds.JSONData.Protocol != "native" {
		t.Errorf("data source at %s:%d (%s), want %s:9000 native", ds.JSONData.Host, ds.JSONData.Port, ds.JSONData.Protocol, c.Services["clickhouse"].Hostname)
	}
	if ds.JSONData.Username != chEnv["CLICKHOUSE_USER"] || ds.Secure.Password != chEnv["CLICKHOUSE_PASSWORD"] || ds.JSONData.DefaultDatabase != chEnv["CLICKHOUSE_DB"] {
		t.Errorf("data source user %s db %s, want the compose ClickHouse's %s db %s", ds.JSONData.Username, ds.JSONData.DefaultDatabase, chEnv["CLICKHOUSE_USER"], chEnv["CLICKHOUSE_DB"])
	}

	var provFile struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	loadYAML(t, dashboardsPath, &provFile)
	if len(provFile.Providers) != 1 {
		t.Fatalf("%s: %d providers, want 1", dashboardsPath, len(provFile.Providers))
	}
	g := c.Services["grafana"]
	mounts := map[string]string{}
	for _, v := range g.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		dst, _, _ = strings.Cut(dst, ":")
		mounts[filepath.Clean(dst)] = filepath.Clean(src)
	}
	want := map[string]string{
		"/etc/grafana/provisioning/datasources":            "deploy/grafana/provisioning/datasources",
		"/etc/grafana/provisioning/dashboards":             "deploy/grafana/provisioning/dashboards",
		filepath.Clean(provFile.Providers[0].Options.Path): "deploy/grafana",
	}
	for dst, src := range want {
		if mounts[dst] != src {
			t.Errorf("grafana service mounts %q at %s, want %s", mounts[dst], dst, src)
		}
	}
	plugins := g.Environment["GF_INSTALL_PLUGINS"]
	if !strings.HasPrefix(plugins, chPluginType+" ") {
		t.Errorf("grafana GF_INSTALL_PLUGINS %q, want %q with a pinned version", plugins, chPluginType+" VERSION")
	}
	if g.DependsOn["clickhouse"].Condition != "service_healthy" {
		t.Error("grafana does not wait for clickhouse to be healthy")
	}
	var d dashboard
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil || d.UID == "" {
		t.Fatalf("%s: uid %q, %v", dashboardPath, d.UID, err)
	}
}
