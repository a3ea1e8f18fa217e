package clickhousesink

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestMigrationTokenKindsKeepsOldRows brings a database made by the build
// before the token kinds (migrations 1-4, with a row written by that build's
// INSERT) up to date, after a run of step 5 that stopped after its first
// column: the old row reads back with zero token kinds and an empty TPOT
// digest, new rows carry them, and the view still feeds span_rollups.
func TestMigrationTokenKindsKeepsOldRows(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	conn := ch.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := ch.NewDatabase(t)

	saved := Migrations
	Migrations = Migrations[:4]
	_, err := Migrate(ctx, conn, db)
	Migrations = saved
	if err != nil {
		t.Fatal(err)
	}
	// The old build's insert.
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+`.span_rollups_input (tenant, service, model, variant, minute, minute_unix_nano,
 spans, errors, input_tokens, output_tokens, corrections, late_spans, durations_ms, ttfts_ms)`)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append("old", "s", "m", "", t0, t0.UnixNano(), uint64(3), uint64(0), uint64(30), uint64(60), uint64(1), uint64(0),
		[]float64{10, 20, 30}, []float64{1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	// A step 5 interrupted after its first column.
	if err := conn.Exec(ctx, "ALTER TABLE "+db+".span_rollups ADD COLUMN cache_read_tokens UInt64"); err != nil {
		t.Fatal(err)
	}
	res, err := Migrate(ctx, conn, db)
	if err != nil {
		t.Fatal(err)
	}
	if step5 := res[4]; step5.Version != 5 || step5.Outcome != OutcomeApplied {
		t.Fatalf("step 5: %+v", step5)
	}

	s := newSink(t, sinkConfig(ch, db))
	key := schemas.Key{Tenant: "new", Service: "s", Model: "m"}
	var rs []schemas.Rollup
	var tpots []float64
	for m := range 5 {
		r := schemas.Rollup{Key: key, MinuteUnixNano: t0.Add(time.Duration(m) * time.Minute).UnixNano(), N: 4,
			InputTokens: 40, OutputTokens: 80, CacheReadTokens: 10, CacheWriteTokens: 2, ReasoningTokens: 30,
			DurationsMs: []float64{100, 200, 300, 400}, TTFTsMs: []float64{10, 20}, TPOTsMs: []float64{float64(m), float64(m) + 10}}
		tpots = append(tpots, r.TPOTsMs...)
		rs = append(rs, r)
	}
	write(t, s, schemas.Output{Rollups: rs})
	write(t, s, schemas.Output{Rollups: rs[2:]}) // a replay counts once
	flush(t, s)

	dbc := ch.ConnDatabase(t, db)
	type row struct {
		rows, spans, read, wrote, reason, tpotN uint64
		tpotQ                                   []float64
	}
	read := func(tenant string) row {
		var r row
		if err := dbc.QueryRow(ctx, `SELECT count(), sum(spans), sum(cache_read_tokens), sum(cache_write_tokens), sum(reasoning_tokens),
			sum(tpot_samples), quantilesTDigestMerge(`+QuantileLevelsSQL+`)(tpot_ms_q)
			FROM span_rollups FINAL WHERE tenant = ?`, tenant).Scan(&r.rows, &r.spans, &r.read, &r.wrote, &r.reason, &r.tpotN, &r.tpotQ); err != nil {
			t.Fatal(err)
		}
		return r
	}
	old := read("old")
	if old.rows != 1 || old.spans != 3 || old.read != 0 || old.wrote != 0 || old.reason != 0 || old.tpotN != 0 {
		t.Errorf("old row after the migration: %+v", old)
	}
	got := read("new")
	if got.rows != 5 || got.spans != 20 || got.read != 50 || got.wrote != 10 || got.reason != 150 || got.tpotN != 10 {
		t.Errorf("new rows: %+v; want 5 rows, 20 spans, 50/10/150 tokens, 10 TPOT samples", got)
	}
	slices.Sort(tpots)
	if len(got.tpotQ) != len(QuantileLevels) || got.tpotQ[0] < tpots[0] || got.tpotQ[len(got.tpotQ)-1] > tpots[len(tpots)-1] {
		t.Errorf("TPOT quantiles %v outside the data %v", got.tpotQ, tpots)
	}
	if again, err := Migrate(ctx, conn, db); err != nil || again[len(again)-1].Outcome != OutcomeAlreadyApplied {
		t.Fatalf("re-run: %v %v", again, err)
	}
}
