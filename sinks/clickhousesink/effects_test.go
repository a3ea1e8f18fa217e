package clickhousesink

import (
	"context"
	"slices"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// makeEffect is an effect verdict (processors/effect's layout) of the
// command (target, version).
func makeEffect(target schemas.Key, version uint64, method string, status schemas.Status, before, after float64, evals int) schemas.Verdict {
	recovered := 0.0
	if status == schemas.StatusOK {
		recovered = 1
	}
	issued := t0.UnixNano()
	v := schemas.Verdict{
		Processor: "effect", SLO: "latency", Metric: "p999_duration_ms", Key: target,
		WindowStartUnixNano: issued, WindowEndUnixNano: issued + int64(evals)*60e9,
		Value: after, Threshold: 3000, Status: status, Method: method, N: 900,
		Details: []schemas.Detail{{Name: "command_version", Value: float64(version)}, {Name: "command_level", Value: 2},
			{Name: "before", Value: before}, {Name: "after", Value: after}, {Name: "after_status", Value: 3 - 2*recovered}, {Name: "recovered", Value: recovered},
			{Name: "evaluations", Value: float64(evals)}, {Name: "max_evaluations", Value: 10},
			{Name: "evaluations_with_traffic", Value: float64(evals)}, {Name: "scope_keys", Value: 3}, {Name: "superseded_by", Value: 0}},
		ConfigVersion: "v1",
	}
	v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, target, int64(version), v.ConfigVersion)
	return v
}

// TestFuseEffectsView: effect verdicts written twice (a replay) read back
// from fuse_effects once each, with the details as columns — the command
// version exact at the breaker's magnitudes (about 2^50) — and other
// processors' verdicts not in it.
func TestFuseEffectsView(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migratedDB(t, ch)
	s := newSink(t, sinkConfig(ch, db))
	target := schemas.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "stable"}
	const version = uint64(1_782_580_000) << 20
	vs := []schemas.Verdict{
		makeEffect(target, version, "trip:recovered", schemas.StatusOK, 9000, 800, 4),
		makeEffect(target, version+1, "half_open:not_recovered", schemas.StatusBreach, 6000, 7000, 10),
		makeVerdict("tail", 1),
	}
	write(t, s, schemas.Output{Verdicts: vs})
	flush(t, s)
	write(t, s, schemas.Output{Verdicts: slices.Clone(vs)})
	flush(t, s)

	conn := ch.ConnDatabase(t, db)
	rows, err := conn.Query(context.Background(), `SELECT id, target_tenant, target_model, command_version, action, outcome, status,
		recovered, after_status, before_value, after_value, evaluations, max_evaluations, issued_at_unix_nano, decided_at_unix_nano
		FROM fuse_effects ORDER BY command_version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type row struct {
		id, tenant, model       string
		version                 uint64
		action, outcome, status string
		recovered, afterStatus  uint8
		before, after           float64
		evals, maxEvals         uint32
		issued, decided         int64
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.tenant, &r.model, &r.version, &r.action, &r.outcome, &r.status, &r.recovered, &r.afterStatus,
			&r.before, &r.after, &r.evals, &r.maxEvals, &r.issued, &r.decided); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []row{
		{vs[0].ID, "acme", "big", version, "trip", "recovered", "ok", 1, 1, 9000, 800, 4, 10, vs[0].WindowStartUnixNano, vs[0].WindowEndUnixNano},
		{vs[1].ID, "acme", "big", version + 1, "half_open", "not_recovered", "breach", 0, 3, 6000, 7000, 10, 10, vs[1].WindowStartUnixNano, vs[1].WindowEndUnixNano},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fuse_effects:\n got  %+v\n want %+v", got, want)
	}
}
