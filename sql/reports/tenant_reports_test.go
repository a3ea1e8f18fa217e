package reports_test

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/internal/ui"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sql/reports"
)

// The hand fixture's range: one hour from 2025-06-02 00:00 UTC, three months
// after the random fixtures' (so neither sees the other's rows).
var (
	handFrom = time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)
	handTo   = handFrom.Add(time.Hour)
)

// handObjective, handBase and handExponent are the parameters the
// expected values below were computed with.
const (
	handObjective = 0.9
	handBase      = 10.0
	handExponent  = 2.0
)

// handFixtures are a few verdicts and commands whose reports are computed
// by hand in handHealth and handCredit (the sqlcheck pytest asserts the
// same numbers on chDB):
//
//	latency (tail, budget 1000 ms, every 1m, minutes 0..9):
//	  acme/chat/m1: breach at 2 (1500), 3 (2000), 6 (1200); insufficient at 8
//	  acme/chat/m2: breach at 3 (3000), 9 (1100); warn at 4; insufficient at 8
//	  beta/search/m1: breach at 5 and 6 (1500)
//	  plus an effect verdict of latency (beta, breach at 7), a breach at
//	  -1 min and at the range's end: none may count
//	quality (decay, limit -0.12, every 5m, minutes 0..55): acme/chat/m1
//	  breach at 20 (-0.18) and 25 (-0.24)
//	availability (burnrate, factor 14.4): acme one evaluation, at 30, breach 28.8
//	corrections (max_rate 0): beta, minutes 0..3, breach at 1 (0.05)
//	capacity (scaling, tenant *): a breach, of no tenant
//
// Commands: incident inc-a1 on acme/chat/m1/* (latency; trip, half_open,
// close at 4, 6, 8), inc-m1 on */*/m1/* (latency, 7: acme's and beta's
// keys), inc-q on acme/*/*/* (quality and latency, 26), inc-old before the
// range, inc-m3 on */*/m3/* (no key has m3), and a command without
// correlation ids.
func handFixtures() fixtures {
	var f fixtures
	at := func(min float64) time.Time { return handFrom.Add(time.Duration(min * float64(time.Minute))) }
	add := func(proc, slo, metric string, k schemas.Key, min float64, st schemas.Status, value, threshold float64) {
		end := at(min)
		v := schemas.Verdict{Processor: proc, SLO: slo, Metric: metric, Key: k,
			WindowStartUnixNano: end.Add(-time.Hour).UnixNano(), WindowEndUnixNano: end.UnixNano(),
			Status: st, Method: "hand", ConfigVersion: "v1", Threshold: threshold}
		if st != schemas.StatusInsufficientData {
			v.Value, v.N = value, 1000
		}
		v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
		f.verdicts = append(f.verdicts, v)
	}
	acme1 := schemas.Key{Tenant: "acme", Service: "chat", Model: "m1", Variant: "baseline"}
	acme2 := schemas.Key{Tenant: "acme", Service: "chat", Model: "m2", Variant: "baseline"}
	beta1 := schemas.Key{Tenant: "beta", Service: "search", Model: "m1", Variant: "baseline"}
	const ok, warn, breach, insuff = schemas.StatusOK, schemas.StatusWarn, schemas.StatusBreach, schemas.StatusInsufficientData
	latency := func(k schemas.Key, min float64, st schemas.Status, v float64) {
		add("tail", "latency", "p999_duration_ms", k, min, st, v, 1000)
	}
	for i := 0; i < 10; i++ {
		m := float64(i)
		switch i {
		case 2:
			latency(acme1, m, breach, 1500)
		case 3:
			latency(acme1, m, breach, 2000)
		case 6:
			latency(acme1, m, breach, 1200)
		case 8:
			latency(acme1, m, insuff, 0)
		default:
			latency(acme1, m, ok, 800)
		}
		switch i {
		case 3:
			latency(acme2, m, breach, 3000)
		case 9:
			latency(acme2, m, breach, 1100)
		case 4:
			latency(acme2, m, warn, 1050)
		case 8:
			latency(acme2, m, insuff, 0)
		default:
			latency(acme2, m, ok, 700)
		}
		if i == 5 || i == 6 {
			latency(beta1, m, breach, 1500)
		} else {
			latency(beta1, m, ok, 900)
		}
	}
	add("effect", "latency", "p999_duration_ms", beta1, 7, breach, 1400, 1000)
	latency(acme1, -1, breach, 5000)
	latency(acme1, 60, breach, 5000)
	for m := 0.0; m < 60; m += 5 {
		switch m {
		case 20:
			add("decay", "quality", "decline_alignment", acme1, m, breach, -0.18, -0.12)
		case 25:
			add("decay", "quality", "decline_alignment", acme1, m, breach, -0.24, -0.12)
		default:
			add("decay", "quality", "decline_alignment", acme1, m, ok, -0.05, -0.12)
		}
	}
	add("burnrate", "availability", "burn_rate_page", acme1, 30, breach, 28.8, 14.4)
	for m := 0.0; m < 4; m++ {
		if m == 1 {
			add("corrections", "corrections", "correction_rate", beta1, m, breach, 0.05, 0)
		} else {
			add("corrections", "corrections", "correction_rate", beta1, m, ok, 0, 0)
		}
	}
	add("scaling", "capacity", "scaling", schemas.Key{Tenant: "*", Service: "chat", Model: "*", Variant: "*"}, 10, breach, 0.9, 0.8)

	cmd := func(target schemas.Key, min float64, v uint64, action schemas.Action, state schemas.BreakerState, corr ...string) {
		issued := at(min)
		f.commands = append(f.commands, schemas.FuseCommand{Target: target, Action: action, Level: 2, State: state, Version: v,
			IssuedAtUnixNano: issued.UnixNano(), ExpiresAtUnixNano: issued.Add(15 * time.Minute).UnixNano(),
			Reasons: []schemas.Reason{{VerdictID: "hand", Text: "r"}}, CorrelationIDs: corr})
	}
	m1 := schemas.Key{Tenant: "acme", Service: "chat", Model: "m1", Variant: "*"}
	cmd(m1, -10, 1, schemas.ActionTrip, schemas.StateOpen, "inc-old", "slo:latency")
	cmd(m1, 4, 2, schemas.ActionTrip, schemas.StateOpen, "inc-a1", "slo:latency")
	cmd(m1, 6, 3, schemas.ActionHalfOpen, schemas.StateHalfOpen, "inc-a1", "slo:latency")
	cmd(m1, 8, 4, schemas.ActionClose, schemas.StateClosed, "inc-a1", "slo:latency")
	cmd(schemas.Key{Tenant: "*", Service: "*", Model: "m1", Variant: "*"}, 7, 1, schemas.ActionDegrade, schemas.StateOpen, "inc-m1", "slo:latency")
	cmd(schemas.Key{Tenant: "acme", Service: "*", Model: "*", Variant: "*"}, 26, 1, schemas.ActionTrip, schemas.StateOpen, "inc-q", "slo:quality", "slo:latency")
	cmd(schemas.Key{Tenant: "*", Service: "*", Model: "m3", Variant: "*"}, 27, 1, schemas.ActionTrip, schemas.StateOpen, "inc-m3", "slo:latency")
	cmd(schemas.Key{Tenant: "beta", Service: "search", Model: "m1", Variant: "*"}, 9, 1, schemas.ActionTrip, schemas.StateOpen)
	return f
}

var handHealthColumns = []string{"tenant", "slo", "step_s", "evaluated_minutes", "minutes_out", "compliance", "budget_minutes",
	"budget_minutes_left", "budget_remaining", "breach_evaluations", "breach_episodes", "incidents", "fuse_commands"}

// handHealth is tenant_slo_health of handFixtures at objective 0.9, by hand:
// acme latency: 9 evaluated slots (minute 8 is insufficient), out at 2, 3,
// 6, 9 (runs 2–3, 6, 9: 3 episodes), budget 0.1 × 9 = 0.9 minutes,
// 1 − 4/0.9 = −3.444…; incidents inc-a1, inc-m1, inc-q (5 commands).
var handHealth = [][]any{
	{"acme", "availability", 60, 1.0, 1.0, 0.0, 0.1, -0.9, -9.0, 1, 1, 0, 0},
	{"acme", "latency", 60, 9.0, 4.0, 5.0 / 9, 0.9, 0.9 - 4, 1 - 4/0.9, 5, 3, 3, 5},
	{"acme", "quality", 300, 60.0, 10.0, 10.0 / 12, 6.0, -4.0, 1 - 10.0/6, 2, 1, 1, 1},
	{"beta", "corrections", 60, 4.0, 1.0, 0.75, 0.4, -0.6, -1.5, 1, 1, 0, 0},
	{"beta", "latency", 60, 10.0, 2.0, 0.8, 1.0, -1.0, -1.0, 2, 1, 1, 1},
}

var handCreditColumns = []string{"tenant", "slo", "step_s", "evaluated_minutes", "minutes_out", "minutes_out_unpriced", "hours_out",
	"max_overrun_ratio", "credit_uncapped", "credit"}

// handCredit is sla_credit of handFixtures at base 10, exponent 2, no cap,
// by hand: acme latency's out slots have overrun ratios 0.5 (1500 over
// 1000), 2 (the worst of 2000 and 3000), 0.2 and 0.1, so 10 × (0.25 + 4 +
// 0.04 + 0.01) × 60/3600 = 0.71666…; acme quality: 10 × (0.5² + 1²) ×
// 300/3600; beta corrections' threshold is 0: its minute out earns nothing.
var handCredit = [][]any{
	{"acme", "quality", 300, 60.0, 10.0, 0.0, 10.0 / 60, 1.0, 10 * 1.25 * 300 / 3600.0, 10 * 1.25 * 300 / 3600.0},
	{"acme", "latency", 60, 9.0, 4.0, 0.0, 4.0 / 60, 2.0, 10 * 4.3 / 60, 10 * 4.3 / 60},
	{"acme", "availability", 60, 1.0, 1.0, 0.0, 1.0 / 60, 1.0, 10.0 / 60, 10.0 / 60},
	{"beta", "latency", 60, 10.0, 2.0, 0.0, 2.0 / 60, 0.5, 10 * 0.5 / 60, 10 * 0.5 / 60},
	{"beta", "corrections", 60, 4.0, 1.0, 1.0, 1.0 / 60, 0.0, 0.0, 0.0},
}

// handCreditLinearCapped is sla_credit at base 10, exponent 1, cap 0.4:
// acme latency 10 × (0.5 + 2 + 0.2 + 0.1)/60 = 0.4666… capped to 0.4, quality
// 10 × 1.5 × 300/3600 = 1.25 capped to 0.4 (ties by tenant, SLO).
var handCreditLinearCapped = [][]any{
	{"acme", "latency", 60, 9.0, 4.0, 0.0, 4.0 / 60, 2.0, 28.0 / 60, 0.4},
	{"acme", "quality", 300, 60.0, 10.0, 0.0, 10.0 / 60, 1.0, 1.25, 0.4},
	{"acme", "availability", 60, 1.0, 1.0, 0.0, 1.0 / 60, 1.0, 10.0 / 60, 10.0 / 60},
	{"beta", "latency", 60, 10.0, 2.0, 0.0, 2.0 / 60, 0.5, 10.0 / 60, 10.0 / 60},
	{"beta", "corrections", 60, 4.0, 1.0, 1.0, 1.0 / 60, 0.0, 0.0, 0.0},
}

func handArgs() reports.Args {
	a := reports.DefaultArgs()
	a.From, a.To = handFrom, handTo
	a.Objective, a.CreditBase, a.CreditExponent = handObjective, handBase, handExponent
	return a
}

// TestTenantReportsHandComputed runs tenant_slo_health and sla_credit on
// ClickHouse (18.16 by the harness) over the hand fixture (inserted twice,
// a replay) and compares every cell with the values computed by hand
// above. (TestDumpForCurrentEngine runs them beside the random fixtures,
// and the pytest checks the same values there.)
func TestTenantReportsHandComputed(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	conn := load(t, ch, fixtures{})
	args := handArgs()
	compare(t, run(t, conn, reports.TenantSLOHealth, args), handHealthColumns, handHealth)
	compare(t, run(t, conn, reports.SLACredit, args), handCreditColumns, handCredit)
	args.CreditExponent, args.CreditCap = 1, 0.4
	compare(t, run(t, conn, reports.SLACredit, args), handCreditColumns, handCreditLinearCapped)
}

// pageEqualsReport: the live page's matrix (internal/ui's Store.Tenants)
// of the random fixtures' verdicts and commands in the range equals
// tenant_slo_health on ClickHouse for the same range, cell by cell: the
// page and the report share their definitions (TestReports runs it).
func pageEqualsReport(t *testing.T, conn driver.Conn, f fixtures) {
	args := reports.DefaultArgs()
	args.From, args.To = from, to
	tab := run(t, conn, reports.TenantSLOHealth, args)

	st, err := ui.NewStore(ui.Config{MaxPoints: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var out schemas.Output
	for _, v := range f.verdicts {
		if inRange(v.WindowEndUnixNano) {
			out.Verdicts = append(out.Verdicts, v)
		}
	}
	for _, c := range f.commands {
		if inRange(c.IssuedAtUnixNano) {
			out.Commands = append(out.Commands, c)
		}
	}
	_ = st.Write(context.Background(), out)
	m := st.Tenants(args.Objective)
	var want [][]any
	for _, r := range m.Rows {
		want = append(want, []any{r.Tenant, r.SLO, r.StepS, r.EvaluatedMinutes, r.MinutesOut, r.Compliance, r.BudgetMinutes,
			r.BudgetMinutesLeft, r.BudgetRemaining, r.BreachEvaluations, r.BreachEpisodes, r.Incidents, r.FuseCommands})
	}
	if len(want) != 6 {
		t.Fatalf("the page's matrix: %d cells, want 2 tenants × 3 SLOs", len(want))
	}
	incidents := 0
	for _, r := range m.Rows {
		incidents += r.Incidents
	}
	if incidents == 0 {
		t.Fatal("no incident in the page's matrix: the fixture's commands are not counted")
	}
	compare(t, tab, handHealthColumns, want)
}

// creditInGo computes sla_credit of the random fixtures in Go, from the
// definitions in sla_credit.sql, with the formula's parameters (TestReports
// compares it with the report, at a cap some credits reach). step_s is the
// page matrix's (the same definition, checked by pageEqualsReport).
func creditInGo(f fixtures, steps map[string]int64, base, exponent, cap float64) [][]any {
	type pair struct{ tenant, slo string }
	type slot struct {
		out, judged, priced bool
		ratio               float64
	}
	slots := map[pair]map[int64]*slot{}
	for _, v := range f.verdicts {
		if v.SLO == "" || v.Processor == "effect" || v.Key.Tenant == "*" || !inRange(v.WindowEndUnixNano) {
			continue
		}
		p := pair{v.Key.Tenant, v.SLO}
		if slots[p] == nil {
			slots[p] = map[int64]*slot{}
		}
		sec := v.WindowEndUnixNano / 1e9
		s := slots[p][sec]
		if s == nil {
			s = &slot{}
			slots[p][sec] = s
		}
		switch v.Status {
		case schemas.StatusBreach:
			s.out, s.judged = true, true
			if v.Threshold != 0 {
				s.priced = true
				s.ratio = math.Max(s.ratio, math.Abs(v.Value-v.Threshold)/math.Abs(v.Threshold))
			}
		case schemas.StatusOK, schemas.StatusWarn:
			s.judged = true
		}
	}
	type row struct {
		p      pair
		credit float64
		vals   []any
	}
	var rows []row
	for p, byEnd := range slots {
		var evaluated, out, unpriced int
		var severity, maxRatio float64
		for _, s := range byEnd {
			if s.judged {
				evaluated++
			}
			if s.out {
				out++
				if s.priced {
					severity += math.Pow(s.ratio, exponent)
					maxRatio = math.Max(maxRatio, s.ratio)
				} else {
					unpriced++
				}
			}
		}
		if evaluated == 0 {
			continue
		}
		step := float64(steps[p.slo])
		uncapped := base * severity * step / 3600
		credit := uncapped
		if cap > 0 {
			credit = math.Min(credit, cap)
		}
		rows = append(rows, row{p, credit, []any{p.tenant, p.slo, steps[p.slo], float64(evaluated) * step / 60, float64(out) * step / 60,
			float64(unpriced) * step / 60, float64(out) * step / 3600, maxRatio, uncapped, credit}})
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(b.credit, a.credit), strings.Compare(a.p.tenant, b.p.tenant), strings.Compare(a.p.slo, b.p.slo))
	})
	var want [][]any
	for _, r := range rows {
		want = append(want, r.vals)
	}
	return want
}

// creditEqualsGo runs sla_credit on the random fixtures with a formula
// other than the default and compares it with creditInGo.
func creditEqualsGo(t *testing.T, conn driver.Conn, f fixtures) {
	t.Helper()
	args := reports.DefaultArgs()
	args.From, args.To = from, to
	args.CreditBase, args.CreditExponent = 3, 1.5
	st, err := ui.NewStore(ui.Config{MaxPoints: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var out schemas.Output
	for _, v := range f.verdicts {
		if inRange(v.WindowEndUnixNano) {
			out.Verdicts = append(out.Verdicts, v)
		}
	}
	_ = st.Write(context.Background(), out)
	steps := map[string]int64{}
	for _, r := range st.Tenants(0.999).Rows {
		steps[r.SLO] = r.StepS
	}
	// The cap: the third largest uncapped credit, so that some are capped
	// and some not.
	uncapped := creditInGo(f, steps, args.CreditBase, args.CreditExponent, 0)
	args.CreditCap = math.Round(uncapped[2][8].(float64)*1000) / 1000
	want := creditInGo(f, steps, args.CreditBase, args.CreditExponent, args.CreditCap)
	capped := 0
	for _, w := range want {
		if w[9].(float64) == args.CreditCap {
			capped++
		}
	}
	if len(want) != 6 || capped == 0 || capped == len(want) {
		t.Fatalf("fixture: %d rows, %d capped: want 6 with some capped and some not", len(want), capped)
	}
	compare(t, run(t, conn, reports.SLACredit, args), handCreditColumns, want)
}
