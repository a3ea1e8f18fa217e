package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// effectSLOs: one tail SLO over 2-minute windows, a breaker that trips a
// key on 2 breaches of its last 3 evaluations and stays open for the whole
// run (no half-open: the effect judged is the trip's), and effects judged
// over 8 evaluations (a 2-minute window is clean of the incident 2
// evaluations after it ends).
const effectSLOs = `
slos:
  - name: latency
    tail: {budget: 6000, window: 2m, every: 1m}
breaker:
  k: 2
  n: 3
  cool_down: 1h
  max_cool_down: 1h
  rules:
    - {processor: tail, action: trip}
effect:
  evaluations: 8
`

// effectScenario: 2 tenants x 1 service x 2 models, no canary, 30 calls
// a second for 26 minutes; the same latency tail blow-up on one model of
// each tenant from minute 8: acme's ends at minute 13, globex's lasts to
// the end.
func effectScenario() traffic.Scenario {
	sc := traffic.Demo()
	sc.Rate, sc.Duration = 30, 26*time.Minute
	sc.Tenants, sc.Services, sc.Models, sc.CanaryShare = []string{"acme", "globex"}, []string{"chat"}, []string{"big", "small"}, 0
	sc.Incidents = []traffic.Incident{
		{Name: "acme tail (ends)", Kind: traffic.TailBlowup, Start: 8 * time.Minute, End: 13 * time.Minute,
			Target: traffic.Target{Tenant: "acme", Service: "chat", Model: "big"}, Magnitude: 0.05},
		{Name: "globex tail (lasts)", Kind: traffic.TailBlowup, Start: 8 * time.Minute, End: 26 * time.Minute,
			Target: traffic.Target{Tenant: "globex", Service: "chat", Model: "big"}, Magnitude: 0.05},
	}
	return sc
}

// TestKafkaE2EEffectVerdicts runs two scripted incidents through the whole
// pipeline (kfake, the Kafka and ClickHouse sinks): each trips its key;
// acme's incident ends and its trip's effect verdict says recovered (the
// users' traffic of acme/chat back under budget within 8 evaluations),
// globex's does not and its effect verdict says not recovered after 8.
// Both verdicts are on fusebox.verdicts and in ClickHouse's fuse_effects,
// once each, naming the version of the trip they judge; the refreshes of
// the trips get none.
func TestKafkaE2EEffectVerdicts(t *testing.T) {
	k := testharness.StartBroker(t)
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t)
	conn := ch.ConnDatabase(t, db)

	sc := effectScenario()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pub := publishScenario(ctx, t, k, sc, 0)
	yaml := e2eConfigYAML(withClickHouse(e2eOpts{brokers: k.Brokers, group: "effect", idleSourceTimeout: 2 * time.Second}, ch, db))
	yaml = yaml[:strings.Index(yaml, "\nslos:\n")] + effectSLOs
	cfg, err := config.Parse("effect.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, cfg, nil)
	r.waitDrained(t, k, cfg, pub.Spans, 2*time.Minute)
	r.stop(t)

	start := e2eStart.UnixNano()
	minute := func(ns int64) float64 { return float64(ns-start) / float64(time.Minute) }
	trips := map[schemas.Key]schemas.FuseCommand{}
	for _, c := range kafkaCommands(t, k, cfg.Topics.Fuse) {
		if c.Action != schemas.ActionTrip {
			t.Fatalf("command %s %s at +%.0fm: want trips only (cool-down 1h)", c.Target.String(), c.Action, minute(c.IssuedAtUnixNano))
		}
		if first, ok := trips[c.Target]; !ok || c.Version < first.Version {
			trips[c.Target] = c
		}
	}
	acme := schemas.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "baseline"}
	globex := schemas.Key{Tenant: "globex", Service: "chat", Model: "big", Variant: "baseline"}
	if len(trips) != 2 || trips[acme].Version == 0 || trips[globex].Version == 0 {
		t.Fatalf("tripped targets %v, want %s and %s", keysOf(trips), acme.String(), globex.String())
	}

	type effectRow struct {
		method                string
		status                schemas.Status
		version               uint64
		before, after         float64
		evaluations, maxEvals float64
		issuedAt, decidedAt   int64
	}
	onKafka := map[string]effectRow{}
	healthy := map[schemas.Key]int{} // judged tail verdicts of the keys no incident touched
	for _, v := range kafkaVerdicts(t, k, cfg.Topics.Verdicts) {
		if v.Processor != "effect" {
			if v.Key.Model == "small" && v.Status != schemas.StatusInsufficientData {
				healthy[v.Key]++
			}
			continue
		}
		d := func(n string) float64 { x, _ := v.Detail(n); return x }
		row := effectRow{v.Method, v.Status, uint64(d("command_version")), d("before"), d("after"), d("evaluations"), d("max_evaluations"),
			v.WindowStartUnixNano, v.WindowEndUnixNano}
		if prev, dup := onKafka[v.ID]; dup && prev != row {
			t.Fatalf("effect verdict %s twice, different: %+v, %+v", v.ID, prev, row)
		}
		onKafka[v.ID] = row
		want := map[schemas.Key]string{acme: "trip:recovered", globex: "trip:not_recovered"}[v.Key]
		c := trips[v.Key]
		t.Logf("effect %s %s: before %.0f ms -> after %.0f ms, %v of %v evaluations, trip v%d at +%.0fm, decided at +%.0fm",
			v.Key.String(), v.Method, row.before, row.after, row.evaluations, row.maxEvals, row.version, minute(row.issuedAt), minute(row.decidedAt))
		switch {
		case want == "":
			t.Fatalf("effect verdict for %s, which did not trip", v.Key.String())
		case v.Method != want:
			t.Errorf("%s: %s, want %s", v.Key.String(), v.Method, want)
		case row.version != c.Version || row.issuedAt != c.IssuedAtUnixNano:
			t.Errorf("%s: judges version %d issued at %d, want the trip's %d at %d", v.Key.String(), row.version, row.issuedAt, c.Version, c.IssuedAtUnixNano)
		case row.before <= 6000 || v.SLO != "latency" || v.Threshold != 6000:
			t.Errorf("%s: before %.0f of SLO %q budget %v, want the tripping breach (> 6000) of latency", v.Key.String(), row.before, v.SLO, v.Threshold)
		case want == "trip:recovered" && (v.Status != schemas.StatusOK || row.after > 6000 || row.evaluations < 1 || row.evaluations > 8):
			t.Errorf("%s: recovered with status %s after %.0f in %v evaluations", v.Key.String(), v.Status, row.after, row.evaluations)
		case want == "trip:not_recovered" && (v.Status != schemas.StatusBreach || row.after <= 6000 || row.evaluations != 8):
			t.Errorf("%s: not recovered with status %s after %.0f in %v evaluations", v.Key.String(), v.Status, row.after, row.evaluations)
		}
	}
	// The healthy keys kept their verdicts, every minute, through both
	// incidents and trips.
	for _, key := range []schemas.Key{{Tenant: "acme", Service: "chat", Model: "small", Variant: "baseline"}, {Tenant: "globex", Service: "chat", Model: "small", Variant: "baseline"}} {
		if healthy[key] < 20 {
			t.Errorf("%s: %d judged verdicts in 26 minutes, want one a minute after the first window", key.String(), healthy[key])
		}
	}
	if len(onKafka) != 2 {
		t.Fatalf("%d effect verdicts on %s, want 2 (one per trip; refreshes are not judged)", len(onKafka), cfg.Topics.Verdicts)
	}

	rows, err := conn.Query(context.Background(), `SELECT id, action, outcome, status, command_version, before_value, after_value,
		evaluations, max_evaluations, issued_at_unix_nano, decided_at_unix_nano FROM `+db+`.fuse_effects`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	inCH := map[string]effectRow{}
	for rows.Next() {
		var (
			id, action, outcome, status string
			version                     uint64
			before, after               float64
			evals, maxEvals             uint32
			issued, decided             int64
		)
		if err := rows.Scan(&id, &action, &outcome, &status, &version, &before, &after, &evals, &maxEvals, &issued, &decided); err != nil {
			t.Fatal(err)
		}
		if _, dup := inCH[id]; dup {
			t.Fatalf("fuse_effects: id %s twice", id)
		}
		inCH[id] = effectRow{action + ":" + outcome, schemas.Status(status), version, before, after, float64(evals), float64(maxEvals), issued, decided}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(inCH) != fmt.Sprint(onKafka) {
		t.Fatalf("fuse_effects in ClickHouse:\n %+v\nwant what fusebox.verdicts holds:\n %+v", inCH, onKafka)
	}
}

func keysOf(m map[schemas.Key]schemas.FuseCommand) []string {
	var out []string
	for k := range m {
		out = append(out, k.String())
	}
	return out
}
