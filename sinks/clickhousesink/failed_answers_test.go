package clickhousesink

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestFailedAnswersColumns brings a database made by the build before the
// failed answers (migrations 1-6, with a row written by that build's
// INSERT) up to date, after a run of step 7 that stopped after its first
// column: the old row reads back with zero failed answers; new rows carry
// the counts and their reasons, once each after a replay of the same
// (key, minute); the view still feeds span_rollups.
func TestFailedAnswersColumns(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	conn := ch.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := ch.NewDatabase(t)

	saved := Migrations
	Migrations = Migrations[:6]
	_, err := Migrate(ctx, conn, db)
	Migrations = saved
	if err != nil {
		t.Fatal(err)
	}
	// The old build's insert.
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+`.span_rollups_input (tenant, service, model, variant, minute, minute_unix_nano,
 spans, errors, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
 corrections, late_spans, durations_ms, ttfts_ms, tpots_ms)`)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append("old", "s", "m", "", t0, t0.UnixNano(), uint64(3), uint64(1), uint64(30), uint64(60), uint64(0), uint64(0), uint64(0),
		uint64(0), uint64(0), []float64{10, 20, 30}, []float64{}, []float64{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	// A step 7 interrupted after its first column.
	if err := conn.Exec(ctx, "ALTER TABLE "+db+".span_rollups ADD COLUMN failed_answers UInt64"); err != nil {
		t.Fatal(err)
	}
	res, err := Migrate(ctx, conn, db)
	if err != nil {
		t.Fatal(err)
	}
	if step7 := res[6]; step7.Version != 7 || step7.Outcome != OutcomeApplied {
		t.Fatalf("step 7: %+v", step7)
	}

	s := newSink(t, sinkConfig(ch, db))
	storm := schemas.Key{Tenant: "new", Service: "s", Model: "m"}
	healthy := schemas.Key{Tenant: "new", Service: "s", Model: "h"}
	var rs []schemas.Rollup
	for m := range 5 {
		at := t0.Add(time.Duration(m) * time.Minute).UnixNano()
		// Minute m of the storm key: 100 calls, 30+m filtered, 2 cut off,
		// 1 empty, 1 with another configured reason.
		rs = append(rs,
			schemas.Rollup{Key: storm, MinuteUnixNano: at, N: 100, Errors: 1, DurationsMs: []float64{100, 200},
				FailedAnswers: int64(34 + m), FailedContentFilter: int64(30 + m), FailedLength: 2, EmptyAnswers: 1},
			schemas.Rollup{Key: healthy, MinuteUnixNano: at, N: 100, Errors: 2, DurationsMs: []float64{100}})
	}
	write(t, s, schemas.Output{Rollups: rs})
	write(t, s, schemas.Output{Rollups: rs[4:]}) // a replay counts once
	flush(t, s)

	dbc := ch.ConnDatabase(t, db)
	type row struct{ rows, spans, errors, failed, length, filtered, empty uint64 }
	read := func(where string, args ...any) row {
		var r row
		if err := dbc.QueryRow(ctx, `SELECT count(), sum(spans), sum(errors), sum(failed_answers), sum(failed_length),
			sum(failed_content_filter), sum(empty_answers) FROM span_rollups FINAL WHERE `+where, args...).Scan(
			&r.rows, &r.spans, &r.errors, &r.failed, &r.length, &r.filtered, &r.empty); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if old := read("tenant = ?", "old"); old != (row{1, 3, 1, 0, 0, 0, 0}) {
		t.Errorf("old row after the migration: %+v, want 1 row, 3 spans, 1 error, no failed answers", old)
	}
	if got := read("tenant = ? AND model = ?", "new", "m"); got != (row{5, 500, 5, 180, 10, 160, 5}) {
		t.Errorf("storm key: %+v; want 5 rows, 500 spans, 5 errors, 180 failed answers (10 length, 160 content_filter, 5 empty)", got)
	}
	if got := read("tenant = ? AND model = ?", "new", "h"); got != (row{5, 500, 10, 0, 0, 0, 0}) {
		t.Errorf("healthy key: %+v; want 5 rows, 500 spans, 10 errors, no failed answers", got)
	}
	if again, err := Migrate(ctx, conn, db); err != nil || again[len(again)-1].Outcome != OutcomeAlreadyApplied {
		t.Fatalf("re-run: %v %v", again, err)
	}
}
