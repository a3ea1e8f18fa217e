package reports_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
	"github.com/fusebox-dev/fusebox/sql/reports"
)

// The fixture range: two days from 2025-03-04 00:00 UTC. Rows just outside
// it (an hour before, exactly at the end) must not appear in any report.
var (
	from = time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)
	to   = from.Add(48 * time.Hour)
)

type fixtures struct {
	verdicts []schemas.Verdict
	rollups  []schemas.Rollup
	commands []schemas.FuseCommand
}

// inRange reports whether ns (truncated to seconds, as DateTime stores it)
// falls in [from, to).
func inRange(ns int64) bool {
	s := time.Unix(ns/1e9, 0)
	return !s.Before(from) && s.Before(to)
}

func makeFixtures(rng *rand.Rand) fixtures {
	var f fixtures
	statuses := []schemas.Status{schemas.StatusOK, schemas.StatusOK, schemas.StatusWarn, schemas.StatusBreach, schemas.StatusInsufficientData}
	keys := []schemas.Key{
		{Tenant: "t1", Service: "chat", Model: "m0", Variant: "baseline"},
		{Tenant: "t1", Service: "chat", Model: "m0", Variant: "canary"},
		{Tenant: "t2", Service: "search", Model: "m1", Variant: "baseline"},
		{Tenant: "t2", Service: "chat", Model: "m1", Variant: "canary"},
	}
	// Evaluation times: every 7 minutes from 1 h before the range to 1 h
	// after it, plus one exactly at its end.
	var ends []time.Time
	for t := from.Add(-time.Hour); t.Before(to.Add(time.Hour)); t = t.Add(7 * time.Minute) {
		ends = append(ends, t.Add(time.Duration(rng.IntN(60))*time.Second))
	}
	ends = append(ends, to)
	for _, end := range ends {
		for _, k := range keys {
			for _, proc := range []struct{ name, slo string }{{"tail", "latency"}, {"drift", "quality"}, {"burnrate", "availability"}} {
				metrics := []string{"duration_ms", "ttft_ms"}
				if proc.name == "drift" {
					metrics = []string{"confidence", "output_tokens"}
				}
				if proc.name == "burnrate" {
					metrics = []string{"burn_rate_1h"}
				}
				for _, metric := range metrics {
					if rng.IntN(3) == 0 {
						continue
					}
					st := statuses[rng.IntN(len(statuses))]
					v := schemas.Verdict{Processor: proc.name, SLO: proc.slo, Metric: metric, Key: k,
						WindowStartUnixNano: end.Add(-time.Hour).UnixNano(), WindowEndUnixNano: end.UnixNano(),
						Status: st, Method: "m_" + proc.name, ConfigVersion: "v1", Threshold: 500}
					if st != schemas.StatusInsufficientData {
						// Few distinct values so that ties happen.
						v.Value = float64(100 + 50*rng.IntN(12))
						v.Lower, v.Upper, v.IntervalLevel = v.Value-10, v.Value+20, 0.95
						v.N = int64(100 + rng.IntN(1000))
					}
					v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
					f.verdicts = append(f.verdicts, v)
				}
			}
		}
	}
	// Rollups: every minute of the range for each key (some minutes
	// skipped), plus minutes just outside.
	for m := from.Add(-10 * time.Minute); m.Before(to.Add(10 * time.Minute)); m = m.Add(time.Minute) {
		for _, k := range keys {
			if rng.IntN(4) == 0 {
				continue
			}
			n := int64(rng.IntN(40))
			r := schemas.Rollup{Key: k, MinuteUnixNano: m.UnixNano(), N: n}
			for i := int64(0); i < n; i++ {
				if rng.IntN(100) < 2 {
					r.Errors++
				}
				if rng.IntN(100) < 6 {
					r.Corrections++
				}
				r.DurationsMs = append(r.DurationsMs, 100+rng.Float64()*100)
			}
			f.rollups = append(f.rollups, r)
		}
	}
	// Commands: two targets, versions 1..4 an hour apart from 30 min before
	// the range.
	for ti, target := range []schemas.Key{keys[0], {Tenant: "t2", Service: "*", Model: "m1", Variant: "*"}} {
		actions := []schemas.Action{schemas.ActionTrip, schemas.ActionHalfOpen, schemas.ActionClose, schemas.ActionDegrade}
		for v := uint64(1); v <= 4; v++ {
			issued := from.Add(-30*time.Minute + time.Duration(v-1)*time.Hour + time.Duration(ti)*time.Minute)
			c := schemas.FuseCommand{Target: target, Action: actions[v-1], Level: int(v % 3), State: schemas.StateOpen,
				Version: v, IssuedAtUnixNano: issued.UnixNano(), ExpiresAtUnixNano: issued.Add(15 * time.Minute).UnixNano(),
				Fallback: "m-small", Reasons: []schemas.Reason{{VerdictID: fmt.Sprintf("v%d-%d", ti, v), Text: "r"}},
				CorrelationIDs: []string{fmt.Sprintf("inc-%d", ti), "slo:latency"}, KeyID: "k1", Signature: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}
			f.commands = append(f.commands, c)
		}
	}
	return f
}

// load migrates a database and inserts the fixtures and the hand fixtures
// (handFixtures, in a range of their own) twice (a replay).
func load(t *testing.T, ch *testharness.ClickHouse, f fixtures) driver.Conn {
	t.Helper()
	db := ch.NewDatabase(t)
	ctx := context.Background()
	admin := ch.Conn(t)
	if _, err := clickhousesink.Migrate(ctx, admin, db); err != nil {
		t.Fatal(err)
	}
	hand := handFixtures()
	f.verdicts = append(slices.Clone(f.verdicts), hand.verdicts...)
	f.commands = append(slices.Clone(f.commands), hand.commands...)
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
	return ch.ConnDatabase(t, db)
}

func run(t *testing.T, conn driver.Conn, r reports.Report, args reports.Args) *reports.Table {
	t.Helper()
	tab, err := r.Run(context.Background(), conn, args)
	if err != nil {
		t.Fatalf("%s: %v", r.Name, err)
	}
	return tab
}

// compare checks a table against expected rows cell by cell: numbers as
// float64 within a relative 1e-9, times by Equal, the rest by ==.
func compare(t *testing.T, tab *reports.Table, wantCols []string, want [][]any) {
	t.Helper()
	if !slices.Equal(tab.Columns, wantCols) {
		t.Fatalf("%s: columns %v, want %v", tab.Report, tab.Columns, wantCols)
	}
	if len(tab.Rows) != len(want) {
		t.Errorf("%s: %d rows, want %d", tab.Report, len(tab.Rows), len(want))
	}
	for i := 0; i < min(len(tab.Rows), len(want)); i++ {
		for j, w := range want[i] {
			g := tab.Rows[i][j]
			if !cellEqual(g, w) {
				t.Errorf("%s row %d (%v) column %s: got %v (%T), want %v", tab.Report, i, want[i][:3], wantCols[j], g, g, w)
			}
		}
	}
}

func cellEqual(g, w any) bool {
	if gf, ok := toFloat(g); ok {
		wf, ok := toFloat(w)
		return ok && (gf == wf || math.Abs(gf-wf) <= 1e-9*math.Max(math.Abs(gf), math.Abs(wf)))
	}
	switch wv := w.(type) {
	case time.Time:
		gt, ok := g.(time.Time)
		return ok && gt.Equal(wv)
	case []string:
		gs, ok := g.([]string)
		return ok && slices.Equal(gs, wv)
	}
	return g == w
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

func sec(ns int64) time.Time { return time.Unix(ns/1e9, 0).UTC() }

func TestReports(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	f := makeFixtures(rand.New(rand.NewPCG(7, 11)))
	conn := load(t, ch, f)
	args := reports.DefaultArgs()
	args.From, args.To = from, to
	args.Limit = 5

	t.Run("tail_p999_hourly", func(t *testing.T) {
		type gk struct {
			hour          time.Time
			model, metric string
		}
		type acc struct {
			n, breaches uint64
			worst       schemas.Verdict
		}
		groups := map[gk]*acc{}
		for _, v := range f.verdicts {
			if v.Processor != "tail" || v.Status == schemas.StatusInsufficientData || !inRange(v.WindowEndUnixNano) {
				continue
			}
			k := gk{sec(v.WindowEndUnixNano).Truncate(time.Hour), v.Key.Model, v.Metric}
			a := groups[k]
			if a == nil {
				a = &acc{worst: v}
				groups[k] = a
			}
			a.n++
			if v.Status == schemas.StatusBreach {
				a.breaches++
			}
			// Highest value; ties: later window end, then larger id.
			if c := cmp.Or(cmp.Compare(v.Value, a.worst.Value), cmp.Compare(v.WindowEndUnixNano, a.worst.WindowEndUnixNano), strings.Compare(v.ID, a.worst.ID)); c > 0 {
				a.worst = v
			}
		}
		var keys []gk
		for k := range groups {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b gk) int {
			return cmp.Or(a.hour.Compare(b.hour), strings.Compare(a.model, b.model), strings.Compare(a.metric, b.metric))
		})
		var want [][]any
		for _, k := range keys {
			a := groups[k]
			w := a.worst
			want = append(want, []any{k.hour, k.model, k.metric, a.n, a.breaches, w.Value, w.Lower, w.Upper, w.IntervalLevel,
				w.Threshold, w.Method, string(w.Status), w.Key.Tenant, w.Key.Service, w.Key.Variant})
		}
		if len(want) < 90 {
			t.Fatalf("fixture too small: %d groups", len(want))
		}
		compare(t, run(t, conn, reports.TailP999Hourly, args),
			[]string{"hour", "model", "metric", "evaluations", "breaches", "estimate", "ci_lower", "ci_upper", "ci_level",
				"budget", "estimate_method", "estimate_status", "estimate_tenant", "estimate_service", "estimate_variant"}, want)
	})

	t.Run("slo_compliance_daily", func(t *testing.T) {
		type gk struct {
			day        time.Time
			slo, model string
		}
		counts := map[gk]*[4]uint64{} // ok, warn, breach, insufficient
		for _, v := range f.verdicts {
			if v.SLO == "" || !inRange(v.WindowEndUnixNano) {
				continue
			}
			k := gk{sec(v.WindowEndUnixNano).Truncate(24 * time.Hour), v.SLO, v.Key.Model}
			c := counts[k]
			if c == nil {
				c = new([4]uint64)
				counts[k] = c
			}
			c[slices.Index([]schemas.Status{schemas.StatusOK, schemas.StatusWarn, schemas.StatusBreach, schemas.StatusInsufficientData}, v.Status)]++
		}
		var keys []gk
		for k, c := range counts {
			if c[0]+c[1]+c[2] > 0 {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b gk) int {
			return cmp.Or(a.day.Compare(b.day), strings.Compare(a.slo, b.slo), strings.Compare(a.model, b.model))
		})
		var want [][]any
		for _, k := range keys {
			c := counts[k]
			n := c[0] + c[1] + c[2]
			want = append(want, []any{k.day, k.slo, k.model, c[0], c[1], c[2], c[3], n, float64(c[0]+c[1]) / float64(n)})
		}
		if len(want) != 2*3*2 {
			t.Fatalf("fixture: %d groups, want 12", len(want))
		}
		compare(t, run(t, conn, reports.SLOComplianceDaily, args),
			[]string{"day", "slo", "model", "ok_evaluations", "warn_evaluations", "breach_evaluations", "insufficient_evaluations", "evaluations", "compliance"}, want)
	})

	t.Run("error_budget", func(t *testing.T) {
		type gk struct{ tenant, service, model string }
		sums := map[gk]*[2]int64{}
		for _, r := range f.rollups {
			if !inRange(r.MinuteUnixNano) {
				continue
			}
			k := gk{r.Key.Tenant, r.Key.Service, r.Key.Model}
			s := sums[k]
			if s == nil {
				s = new([2]int64)
				sums[k] = s
			}
			s[0] += r.N
			s[1] += r.Errors
		}
		type row struct {
			k         gk
			remaining float64
			vals      []any
		}
		var rows []row
		for k, s := range sums {
			if s[0] == 0 {
				continue
			}
			spans, errs := float64(s[0]), float64(s[1])
			budget := (1 - args.Objective) * spans
			consumed := errs / budget
			rows = append(rows, row{k, 1 - consumed, []any{k.tenant, k.service, k.model, uint64(s[0]), uint64(s[1]), errs / spans, budget, consumed, 1 - consumed}})
		}
		slices.SortFunc(rows, func(a, b row) int {
			return cmp.Or(cmp.Compare(a.remaining, b.remaining), strings.Compare(a.k.tenant, b.k.tenant), strings.Compare(a.k.service, b.k.service), strings.Compare(a.k.model, b.k.model))
		})
		var want [][]any
		for _, r := range rows {
			want = append(want, r.vals)
		}
		compare(t, run(t, conn, reports.ErrorBudget, args),
			[]string{"tenant", "service", "model", "total_spans", "total_errors", "error_rate", "budget_errors", "budget_consumed", "budget_remaining"}, want)
	})

	t.Run("fuse_timeline", func(t *testing.T) {
		cols := []string{"target", "version", "issued_at", "action", "level", "state", "expires_at", "fallback", "throttle_fraction", "reason_verdict_ids", "key_id"}
		expect := func(target string) [][]any {
			cs := slices.Clone(f.commands)
			slices.SortFunc(cs, func(a, b schemas.FuseCommand) int {
				return cmp.Or(strings.Compare(a.Target.String(), b.Target.String()), cmp.Compare(a.Version, b.Version))
			})
			var want [][]any
			for _, c := range cs {
				if !inRange(c.IssuedAtUnixNano) || target != "" && c.Target.String() != target {
					continue
				}
				want = append(want, []any{c.Target.String(), c.Version, sec(c.IssuedAtUnixNano), string(c.Action), c.Level, string(c.State),
					sec(c.ExpiresAtUnixNano), c.Fallback, c.ThrottleFraction, []string{c.Reasons[0].VerdictID}, c.KeyID})
			}
			return want
		}
		want := expect("")
		if len(want) != 6 {
			t.Fatalf("fixture: %d commands in range, want 6", len(want))
		}
		compare(t, run(t, conn, reports.FuseTimeline, args), cols, want)
		one := args
		one.Target = f.commands[0].Target.String()
		compare(t, run(t, conn, reports.FuseTimeline, one), cols, expect(one.Target))
	})

	t.Run("drift_top", func(t *testing.T) {
		type gk struct{ metric, tenant, service, model, variant string }
		type acc struct {
			n, breaches uint64
			max         float64
		}
		groups := map[gk]*acc{}
		for _, v := range f.verdicts {
			if v.Processor != "drift" || v.Status == schemas.StatusInsufficientData || !inRange(v.WindowEndUnixNano) {
				continue
			}
			k := gk{v.Metric, v.Key.Tenant, v.Key.Service, v.Key.Model, v.Key.Variant}
			a := groups[k]
			if a == nil {
				a = &acc{max: math.Inf(-1)}
				groups[k] = a
			}
			a.n++
			if v.Status == schemas.StatusBreach {
				a.breaches++
			}
			a.max = math.Max(a.max, v.Value)
		}
		var keys []gk
		for k := range groups {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b gk) int {
			ga, gb := groups[a], groups[b]
			return cmp.Or(cmp.Compare(gb.breaches, ga.breaches), cmp.Compare(gb.max, ga.max), strings.Compare(a.metric, b.metric),
				strings.Compare(a.tenant, b.tenant), strings.Compare(a.service, b.service), strings.Compare(a.model, b.model), strings.Compare(a.variant, b.variant))
		})
		var want [][]any
		for _, k := range keys[:args.Limit] {
			a := groups[k]
			want = append(want, []any{k.metric, k.tenant, k.service, k.model, k.variant, a.n, a.breaches, float64(a.breaches) / float64(a.n), a.max})
		}
		compare(t, run(t, conn, reports.DriftTop, args),
			[]string{"metric", "tenant", "service", "model", "variant", "evaluations", "breaches", "breach_share", "max_statistic"}, want)
	})

	t.Run("tenant_slo_health", func(t *testing.T) { pageEqualsReport(t, conn, f) })
	t.Run("sla_credit", func(t *testing.T) { creditEqualsGo(t, conn, f) })

	t.Run("correction_rate_by_variant", func(t *testing.T) {
		type gk struct{ model, variant string }
		sums := map[gk]*[2]int64{}
		for _, r := range f.rollups {
			if !inRange(r.MinuteUnixNano) {
				continue
			}
			k := gk{r.Key.Model, r.Key.Variant}
			s := sums[k]
			if s == nil {
				s = new([2]int64)
				sums[k] = s
			}
			s[0] += r.N
			s[1] += r.Corrections
		}
		var keys []gk
		for k := range sums {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b gk) int {
			return cmp.Or(strings.Compare(a.model, b.model), strings.Compare(a.variant, b.variant))
		})
		var want [][]any
		for _, k := range keys {
			n, x := float64(sums[k][0]), float64(sums[k][1])
			lo, hi := wilson(x, n, 1.959963984540054)
			want = append(want, []any{k.model, k.variant, uint64(n), uint64(x), x / n, lo, hi})
		}
		compare(t, run(t, conn, reports.CorrectionRateByVariant, args),
			[]string{"model", "variant", "responses", "corrected", "rate", "rate_lower", "rate_upper"}, want)
	})
}

// wilson is the Wilson score interval for x successes in n trials.
func wilson(x, n, z float64) (lo, hi float64) {
	p := x / n
	den := 1 + z*z/n
	center := (p + z*z/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / den
	return center - half, center + half
}

func TestFormats(t *testing.T) {
	tab := &reports.Table{
		Report:  "x",
		Columns: []string{"day", "hour", "model", "n", "rate", "ids"},
		Types:   []string{"Date", "DateTime('UTC')", "String", "UInt64", "Float64", "Array(String)"},
		Rows: [][]any{
			{from, from.Add(90 * time.Minute), "m,0", uint64(12), 1.0 / 3, []string{"a", "b"}},
		},
	}
	var text, csv bytes.Buffer
	if err := tab.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	wantText := "day         hour                 model   n      rate  ids\n" +
		"2025-03-04  2025-03-04 01:30:00  m,0    12  0.333333  a;b\n"
	if text.String() != wantText {
		t.Errorf("text:\n%q\nwant\n%q", text.String(), wantText)
	}
	wantCSV := "day,hour,model,n,rate,ids\n2025-03-04,2025-03-04 01:30:00,\"m,0\",12,0.3333333333333333,a;b\n"
	if csv.String() != wantCSV {
		t.Errorf("csv:\n%q\nwant\n%q", csv.String(), wantCSV)
	}
}

func TestArgsValidate(t *testing.T) {
	a := reports.DefaultArgs()
	a.From, a.To = to, from
	if err := a.Validate(reports.TailP999Hourly); err == nil || !strings.Contains(err.Error(), "to:") {
		t.Errorf("reversed range: %v", err)
	}
	a.From, a.To = from, to
	a.Objective = 1
	if err := a.Validate(reports.ErrorBudget); err == nil || !strings.Contains(err.Error(), "objective") {
		t.Errorf("objective 1: %v", err)
	}
	if err := a.Validate(reports.TailP999Hourly); err != nil {
		t.Errorf("tail report does not use the objective: %v", err)
	}
	if names := reports.Names(); len(names) != 8 || names[0] != "tail_p999_hourly" {
		t.Errorf("Names() = %v", names)
	}
	if _, ok := reports.Lookup("nope"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}
