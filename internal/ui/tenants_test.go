package ui_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/ui"
	"github.com/fusebox-dev/fusebox/schemas"
)

// handStart is the hand fixture's first evaluation.
var handStart = time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)

// handOutput is the hand fixture of sql/reports/tenant_reports_test.go
// (without its rows outside the report's range: the store has no range),
// whose matrix is computed by hand there and in wantHandMatrix:
//
//	latency (tail, budget 1000, every 1m, minutes 0..9): acme/chat/m1
//	  breach at 2, 3, 6, insufficient at 8; acme/chat/m2 breach at 3, 9,
//	  warn at 4, insufficient at 8; beta/search/m1 breach at 5, 6; an
//	  effect verdict of latency (beta, breach at 7) that must not count
//	quality (decay, every 5m, minutes 0..55): acme breach at 20, 25
//	availability (burnrate): acme one breach at 30
//	corrections: beta, minutes 0..3, breach at 1
//	capacity (scaling, tenant *): a breach of no tenant
//
// Commands: inc-a1 on acme/chat/m1/* (3), inc-m1 on */*/m1/* (acme's and
// beta's), inc-q on acme/*/*/* (quality and latency), inc-old before the
// first evaluation, inc-m3 on */*/m3/* (no key), one without correlation
// ids.
func handOutput() schemas.Output {
	var out schemas.Output
	at := func(min float64) int64 { return handStart.Add(time.Duration(min * float64(time.Minute))).UnixNano() }
	add := func(proc, slo, metric string, k schemas.Key, min float64, st schemas.Status, value, threshold float64) {
		v := schemas.Verdict{Processor: proc, SLO: slo, Metric: metric, Key: k, WindowEndUnixNano: at(min),
			Status: st, Method: "hand", Threshold: threshold, N: 1000}
		if st != schemas.StatusInsufficientData {
			v.Value = value
		}
		v.ID = schemas.VerdictID(proc, slo, metric, k, v.WindowEndUnixNano, "v1")
		out.Verdicts = append(out.Verdicts, v)
	}
	acme1 := schemas.Key{Tenant: "acme", Service: "chat", Model: "m1", Variant: "baseline"}
	acme2 := schemas.Key{Tenant: "acme", Service: "chat", Model: "m2", Variant: "baseline"}
	beta1 := schemas.Key{Tenant: "beta", Service: "search", Model: "m1", Variant: "baseline"}
	const ok, warn, breach, insuff = schemas.StatusOK, schemas.StatusWarn, schemas.StatusBreach, schemas.StatusInsufficientData
	lat := func(k schemas.Key, m float64, st schemas.Status, v float64) {
		add("tail", "latency", "p999_duration_ms", k, m, st, v, 1000)
	}
	for i := 0.0; i < 10; i++ {
		switch i {
		case 2, 3, 6:
			lat(acme1, i, breach, map[float64]float64{2: 1500, 3: 2000, 6: 1200}[i])
		case 8:
			lat(acme1, i, insuff, 0)
		default:
			lat(acme1, i, ok, 800)
		}
		switch i {
		case 3, 9:
			lat(acme2, i, breach, 3000)
		case 4:
			lat(acme2, i, warn, 1050)
		case 8:
			lat(acme2, i, insuff, 0)
		default:
			lat(acme2, i, ok, 700)
		}
		if i == 5 || i == 6 {
			lat(beta1, i, breach, 1500)
		} else {
			lat(beta1, i, ok, 900)
		}
	}
	add("effect", "latency", "p999_duration_ms", beta1, 7, breach, 1400, 1000)
	for m := 0.0; m < 60; m += 5 {
		st := ok
		if m == 20 || m == 25 {
			st = breach
		}
		add("decay", "quality", "decline_alignment", acme1, m, st, -0.2, -0.12)
	}
	add("burnrate", "availability", "burn_rate_page", acme1, 30, breach, 28.8, 14.4)
	for m := 0.0; m < 4; m++ {
		st := ok
		if m == 1 {
			st = breach
		}
		add("corrections", "corrections", "correction_rate", beta1, m, st, 0.05, 0)
	}
	add("scaling", "capacity", "scaling", schemas.Key{Tenant: "*", Service: "chat", Model: "*", Variant: "*"}, 10, breach, 0.9, 0.8)

	cmd := func(target schemas.Key, min float64, v uint64, action schemas.Action, corr ...string) {
		out.Commands = append(out.Commands, schemas.FuseCommand{Target: target, Action: action, Level: 2, State: schemas.StateOpen,
			Version: v, IssuedAtUnixNano: at(min), ExpiresAtUnixNano: at(min + 15), CorrelationIDs: corr})
	}
	m1 := schemas.Key{Tenant: "acme", Service: "chat", Model: "m1", Variant: "*"}
	cmd(m1, -10, 1, schemas.ActionTrip, "inc-old", "slo:latency")
	cmd(m1, 4, 2, schemas.ActionTrip, "inc-a1", "slo:latency")
	cmd(m1, 6, 3, schemas.ActionHalfOpen, "inc-a1", "slo:latency")
	cmd(m1, 8, 4, schemas.ActionClose, "inc-a1", "slo:latency")
	cmd(schemas.Key{Tenant: "*", Service: "*", Model: "m1", Variant: "*"}, 7, 1, schemas.ActionDegrade, "inc-m1", "slo:latency")
	cmd(schemas.Key{Tenant: "acme", Service: "*", Model: "*", Variant: "*"}, 26, 1, schemas.ActionTrip, "inc-q", "slo:quality", "slo:latency")
	cmd(schemas.Key{Tenant: "*", Service: "*", Model: "m3", Variant: "*"}, 27, 1, schemas.ActionTrip, "inc-m3", "slo:latency")
	cmd(schemas.Key{Tenant: "beta", Service: "search", Model: "m1", Variant: "*"}, 9, 1, schemas.ActionTrip)
	return out
}

// wantHandMatrix is the matrix of handOutput at objective 0.9, the values
// sql/reports' TestTenantReportsHandComputed expects of tenant_slo_health
// on the same verdicts: acme latency has 9 evaluated minutes (minute 8 is
// insufficient), 4 out (2, 3, 6, 9: 3 episodes), a budget of 0.1 × 9 = 0.9
// minutes, 1 − 4/0.9 left, incidents inc-a1, inc-m1, inc-q (5 commands).
var wantHandMatrix = []ui.TenantSLO{
	{"acme", "availability", 60, 1, 1, 0, 0.1, -0.9, -9, 1, 1, 0, 0},
	{"acme", "latency", 60, 9, 4, 5.0 / 9, 0.9, 0.9 - 4, 1 - 4/0.9, 5, 3, 3, 5},
	{"acme", "quality", 300, 60, 10, 10.0 / 12, 6, -4, 1 - 10.0/6, 2, 1, 1, 1},
	{"beta", "corrections", 60, 4, 1, 0.75, 0.4, -0.6, -1.5, 1, 1, 0, 0},
	{"beta", "latency", 60, 10, 2, 0.8, 1, -1, -1, 2, 1, 1, 1},
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func checkMatrix(t *testing.T, got []ui.TenantSLO, want []ui.TenantSLO) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Tenant != w.Tenant || g.SLO != w.SLO || g.StepS != w.StepS || g.BreachEvaluations != w.BreachEvaluations ||
			g.BreachEpisodes != w.BreachEpisodes || g.Incidents != w.Incidents || g.FuseCommands != w.FuseCommands ||
			!near(g.EvaluatedMinutes, w.EvaluatedMinutes) || !near(g.MinutesOut, w.MinutesOut) || !near(g.Compliance, w.Compliance) ||
			!near(g.BudgetMinutes, w.BudgetMinutes) || !near(g.BudgetMinutesLeft, w.BudgetMinutesLeft) || !near(g.BudgetRemaining, w.BudgetRemaining) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// TestTenantsMatrixHandComputed: the store's matrix of the hand fixture is
// the one computed by hand (and tenant_slo_health's on ClickHouse), also
// through GET /api/ui/tenants, written in any order and twice (a replay).
func TestTenantsMatrixHandComputed(t *testing.T) {
	st, err := ui.NewStore(ui.Config{})
	if err != nil {
		t.Fatal(err)
	}
	out := handOutput()
	rev := schemas.Output{}
	for i := len(out.Verdicts) - 1; i >= 0; i-- {
		rev.Verdicts = append(rev.Verdicts, out.Verdicts[i])
	}
	for i := len(out.Commands) - 1; i >= 0; i-- {
		rev.Commands = append(rev.Commands, out.Commands[i])
	}
	_ = st.Write(context.Background(), rev)
	_ = st.Write(context.Background(), out)
	m := st.Tenants(0.9)
	if m.From != handStart.UnixMilli() || m.To != handStart.Add(55*time.Minute).UnixMilli() || m.Objective != 0.9 {
		t.Errorf("range [%d, %d] objective %v, want [%d, %d] 0.9", m.From, m.To, m.Objective, handStart.UnixMilli(), handStart.Add(55*time.Minute).UnixMilli())
	}
	checkMatrix(t, m.Rows, wantHandMatrix)

	srv := httptest.NewServer(st.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/ui/tenants?objective=0.9")
	if err != nil {
		t.Fatal(err)
	}
	var got ui.TenantsResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/ui/tenants: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	checkMatrix(t, got.Rows, wantHandMatrix)

	// The default objective, and the bad ones.
	if d := st.Tenants(ui.DefaultObjective); !near(d.Rows[1].BudgetMinutes, 0.001*9) {
		t.Errorf("objective 0.999: budget %v minutes, want 0.009", d.Rows[1].BudgetMinutes)
	}
	for _, q := range []string{"objective=1", "objective=0", "objective=x", "objective=0.9&objective=0.8", "tenant=acme"} {
		resp, err := http.Get(srv.URL + "/api/ui/tenants?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("?%s: HTTP %d, want 400", q, resp.StatusCode)
		}
	}
}

// TestTenantsMatrixEmpty: no SLO verdicts, no rows (and no NaN).
func TestTenantsMatrixEmpty(t *testing.T) {
	st, err := ui.NewStore(ui.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Write(context.Background(), schemas.Output{Verdicts: []schemas.Verdict{{ID: "x", Processor: "tail", SLO: "latency",
		Key: schemas.Key{Tenant: "acme"}, WindowEndUnixNano: 1e12, Status: schemas.StatusInsufficientData}}})
	if m := st.Tenants(0.999); len(m.Rows) != 0 {
		t.Errorf("only insufficient data: rows %+v, want none", m.Rows)
	}
}
