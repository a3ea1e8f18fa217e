package clickhousesink

import (
	"context"
	"slices"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestIncidentsTableAndView: an incident's records written twice (a
// replay) read back once each from incidents FINAL, with the keys as
// arrays, and incidents_latest gives one row per incident: its newest
// status, first and last attributed evaluation, the most breaching keys
// and the smallest p-value.
func TestIncidentsTableAndView(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migratedDB(t, ch)
	s := newSink(t, sinkConfig(ch, db))
	first := t0.UnixNano()
	id := schemas.IncidentIDOf("latency", "model", "claude-3-5-haiku", first)
	rec := func(at int64, st schemas.IncidentStatus, b, h int64, p float64) schemas.Incident {
		return schemas.Incident{ID: schemas.IncidentRecordID(id, at), IncidentID: id, SLO: "latency", Processor: "tail",
			Dimension: "model", Value: "claude-3-5-haiku", Status: st, Breaching: b, Healthy: h, OtherHealthy: 24, PValue: p,
			FirstUnixNano: first, LastUnixNano: min(at, first+2*60e9), AtUnixNano: at,
			Keys: []schemas.Key{{Tenant: "acme", Service: "chat", Model: "claude-3-5-haiku", Variant: "baseline"}}, ConfigVersion: "v1"}
	}
	recs := []schemas.Incident{
		rec(first, schemas.IncidentOpened, 10, 2, 1e-8),
		rec(first+60e9, schemas.IncidentGrowing, 12, 0, 2.5e-10),
		rec(first+120e9, schemas.IncidentOngoing, 11, 1, 3e-9),
		rec(first+180e9, schemas.IncidentResolving, 2, 10, 3e-9),
		rec(first+240e9, schemas.IncidentClosed, 0, 12, 3e-9),
	}
	recs[4].Keys = nil
	write(t, s, schemas.Output{Incidents: recs})
	flush(t, s)
	write(t, s, schemas.Output{Incidents: slices.Clone(recs)})
	flush(t, s)

	conn := ch.ConnDatabase(t, db)
	ctx := context.Background()
	var n uint64
	var tenants []string
	if err := conn.QueryRow(ctx, "SELECT count(), groupArray(key_tenants)[1] FROM incidents FINAL WHERE incident_id = ?", id).Scan(&n, &tenants); err != nil {
		t.Fatal(err)
	}
	if n != 5 || len(tenants) != 1 || tenants[0] != "acme" {
		t.Fatalf("incidents FINAL: %d rows (want 5), first keys' tenants %v", n, tenants)
	}
	var (
		dim, value, status string
		firstAt, lastAt    int64
		maxB               int64
		minP               float64
		records            uint64
	)
	if err := conn.QueryRow(ctx, `SELECT dimension, value, status, toInt64(first_at), toInt64(last_at), max_breaching, min_p_value, records
		FROM incidents_latest WHERE incident_id = ?`, id).Scan(&dim, &value, &status, &firstAt, &lastAt, &maxB, &minP, &records); err != nil {
		t.Fatal(err)
	}
	if dim != "model" || value != "claude-3-5-haiku" || status != "closed" || firstAt != first/1e9 || lastAt != (first+120e9)/1e9 ||
		maxB != 12 || minP != 2.5e-10 || records != 5 {
		t.Fatalf("incidents_latest: %s=%s %s first %d last %d max breaching %d min p %v records %d", dim, value, status, firstAt, lastAt, maxB, minP, records)
	}
}
