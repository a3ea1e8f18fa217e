package clickhousesink

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

func TestParseServerVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ServerVersion
		ok   bool
	}{
		{"18.16.1", ServerVersion{18, 16, 1, "18.16.1"}, true},
		{"24.8.4.13", ServerVersion{24, 8, 4, "24.8.4.13"}, true},
		{"19.6", ServerVersion{19, 6, 0, "19.6"}, true},
		{"19", ServerVersion{}, false},
		{"x.1.2", ServerVersion{}, false},
	} {
		got, err := ParseServerVersion(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseServerVersion(%q) = %+v, %v; want %+v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	ttl := ServerVersion{Major: 19, Minor: 6}
	for _, tc := range []struct {
		v    ServerVersion
		want bool
	}{
		{ServerVersion{18, 16, 1, ""}, false},
		{ServerVersion{19, 5, 9, ""}, false},
		{ServerVersion{19, 6, 0, ""}, true},
		{ServerVersion{24, 3, 0, ""}, true},
	} {
		if got := tc.v.AtLeast(ttl); got != tc.want {
			t.Errorf("%v.AtLeast(19.6) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// expectedOutcome is what the first Migrate on server does with m.
func expectedOutcome(server ServerVersion, m Migration) Outcome {
	if server.AtLeast(m.MinServer) {
		return OutcomeApplied
	}
	return OutcomeSkipped
}

func TestMigrateAppliesOnceAndRerunIsNoop(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	conn := ch.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := ch.NewDatabase(t) + "_fusebox" // Migrate creates it
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })

	server, err := QueryServerVersion(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server %s", server)

	first, err := Migrate(ctx, conn, db)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if len(first) != len(Migrations) {
		t.Fatalf("got %d results, want %d", len(first), len(Migrations))
	}
	for i, r := range first {
		if want := expectedOutcome(server, Migrations[i]); r.Outcome != want || r.Version != Migrations[i].Version {
			t.Errorf("first run, step %d %s: %s (%s), want %s", r.Version, r.Name, r.Outcome, r.Reason, want)
		}
	}
	if !server.AtLeast(ServerVersion{Major: 19, Minor: 6}) && first[3].Outcome != OutcomeSkipped {
		t.Errorf("TTL step on %s: %s, want skipped", server, first[3].Outcome)
	}

	// The tables exist with the engines the idempotence relies on.
	engines := map[string]string{}
	rows, err := conn.Query(ctx, "SELECT name, engine FROM system.tables WHERE database = ?", db)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n, e string
		if err := rows.Scan(&n, &e); err != nil {
			t.Fatal(err)
		}
		engines[n] = e
	}
	rows.Close()
	for name, want := range map[string]string{
		TableMigrations: "MergeTree", TableVerdicts: "ReplacingMergeTree", TableFuseCommands: "ReplacingMergeTree",
		TableRollups: "ReplacingMergeTree", TableRollupsInput: "Null", ViewRollups: "MaterializedView",
	} {
		if engines[name] != want {
			t.Errorf("table %s: engine %q, want %q", name, engines[name], want)
		}
	}

	countRecords := func() uint64 {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+"."+TableMigrations).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := countRecords()
	if before != uint64(len(Migrations)) {
		t.Errorf("%d migration records, want %d", before, len(Migrations))
	}

	second, err := Migrate(ctx, conn, db)
	if err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	for i, r := range second {
		want := OutcomeAlreadyApplied
		if expectedOutcome(server, Migrations[i]) == OutcomeSkipped {
			want = OutcomeAlreadySkipped
		}
		if r.Outcome != want {
			t.Errorf("second run, step %d %s: %s, want %s", r.Version, r.Name, r.Outcome, want)
		}
	}
	if after := countRecords(); after != before {
		t.Errorf("second run recorded %d new rows, want none", after-before)
	}
}

func TestMigrateRefusesUnknownVersion(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	conn := ch.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := ch.NewDatabase(t)
	if _, err := Migrate(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+"."+TableMigrations+" (version, name, status, applied_at, server_version)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(uint32(999), "from the future", "applied", time.Now(), "99.1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ctx, conn, db); !errors.Is(err, ErrUnknownMigration) {
		t.Fatalf("Migrate on a newer schema: %v, want ErrUnknownMigration", err)
	}
}

func TestMigrateRejectsBadDatabaseName(t *testing.T) {
	var ce *ConfigError
	if _, err := Migrate(context.Background(), nil, "fusebox; DROP TABLE x"); !errors.As(err, &ce) || ce.Field != "database" {
		t.Fatalf("Migrate with a bad name: %v, want a ConfigError for database", err)
	}
}
