package clickhousesink

import (
	"context"
	"errors"
	"regexp"
	"strings"
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

// migrationWant is what Migrate is expected to report for one step: on the
// first run against a fresh database, and on a second run right after.
type migrationWant struct {
	version       uint32
	name          string
	first, second Outcome
}

// wantMigrations is written out by hand, per server version, rather than
// derived from Migrations: ClickHouse 18.16 (no TTL) skips span_rollups_ttl,
// 19.6 and newer apply every step.
func wantMigrations(server ServerVersion) (wants []migrationWant, ttl bool) {
	if server.Major < 19 || (server.Major == 19 && server.Minor < 6) {
		return []migrationWant{
			{1, "verdicts", OutcomeApplied, OutcomeAlreadyApplied},
			{2, "fuse_commands", OutcomeApplied, OutcomeAlreadyApplied},
			{3, "span_rollups", OutcomeApplied, OutcomeAlreadyApplied},
			{4, "span_rollups_ttl", OutcomeSkipped, OutcomeAlreadySkipped},
			{5, "span_rollups_token_kinds", OutcomeApplied, OutcomeAlreadyApplied},
			{6, "fuse_effects", OutcomeApplied, OutcomeAlreadyApplied},
			{7, "span_rollups_failed_answers", OutcomeApplied, OutcomeAlreadyApplied},
			{8, "incidents", OutcomeApplied, OutcomeAlreadyApplied},
		}, false
	}
	return []migrationWant{
		{1, "verdicts", OutcomeApplied, OutcomeAlreadyApplied},
		{2, "fuse_commands", OutcomeApplied, OutcomeAlreadyApplied},
		{3, "span_rollups", OutcomeApplied, OutcomeAlreadyApplied},
		{4, "span_rollups_ttl", OutcomeApplied, OutcomeAlreadyApplied},
		{5, "span_rollups_token_kinds", OutcomeApplied, OutcomeAlreadyApplied},
		{6, "fuse_effects", OutcomeApplied, OutcomeAlreadyApplied},
		{7, "span_rollups_failed_answers", OutcomeApplied, OutcomeAlreadyApplied},
		{8, "incidents", OutcomeApplied, OutcomeAlreadyApplied},
	}, true
}

// ttlClause matches a TTL clause in a CREATE TABLE statement.
var ttlClause = regexp.MustCompile(`\bTTL\b`)

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
	wants, wantTTL := wantMigrations(server)
	t.Logf("server %s: span_rollups TTL expected %v", server, wantTTL)

	first, err := Migrate(ctx, conn, db)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if len(first) != len(wants) {
		t.Fatalf("first run: %d results, want %d", len(first), len(wants))
	}
	for i, r := range first {
		w := wants[i]
		if r.Version != w.version || r.Name != w.name || r.Outcome != w.first {
			t.Errorf("first run, result %d: step %d %s: %s (%s); want step %d %s: %s",
				i, r.Version, r.Name, r.Outcome, r.Reason, w.version, w.name, w.first)
		}
		if r.Outcome == OutcomeSkipped && r.Reason == "" {
			t.Errorf("first run, step %d %s: skipped without a reason", r.Version, r.Name)
		}
	}

	// The TTL step changed the table definition exactly when it was applied.
	var createQuery string
	if err := conn.QueryRow(ctx, "SELECT create_table_query FROM system.tables WHERE database = ? AND name = ?",
		db, "span_rollups").Scan(&createQuery); err != nil {
		t.Fatalf("span_rollups definition: %v", err)
	}
	if !strings.Contains(createQuery, "CREATE TABLE") || !strings.Contains(createQuery, "ReplacingMergeTree") {
		t.Fatalf("span_rollups definition %q: not a CREATE TABLE statement, so the TTL check would prove nothing", createQuery)
	}
	if got := ttlClause.MatchString(createQuery); got != wantTTL {
		t.Errorf("on %s span_rollups has TTL %v, want %v; definition:\n%s", server, got, wantTTL, createQuery)
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
		TableRollups: "ReplacingMergeTree", TableRollupsInput: "Null", ViewRollups: "MaterializedView", ViewEffects: "View",
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
	if before != uint64(len(wants)) {
		t.Errorf("%d migration records, want %d", before, len(wants))
	}

	second, err := Migrate(ctx, conn, db)
	if err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if len(second) != len(wants) {
		t.Fatalf("second run: %d results, want %d", len(second), len(wants))
	}
	for i, r := range second {
		w := wants[i]
		if r.Version != w.version || r.Name != w.name || r.Outcome != w.second {
			t.Errorf("second run, result %d: step %d %s: %s; want step %d %s: %s",
				i, r.Version, r.Name, r.Outcome, w.version, w.name, w.second)
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
