package clickhousesink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Migration is one versioned step of the schema.
type Migration struct {
	Version uint32
	Name    string
	// MinServer is the oldest ClickHouse the step runs on; on older
	// servers it is skipped and recorded as skipped (zero: any server).
	MinServer ServerVersion
	// Columns are added first, each only when the table does not have it
	// yet (ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS).
	Columns []AddColumn
	// Statements are run in order; {db}, {levels} and {days} are expanded.
	Statements []string
}

// AddColumn is one ALTER TABLE {db}.Table ADD COLUMN Column Type; Type may
// use {levels}. A new column reads as its type's default on the old rows.
type AddColumn struct {
	Table, Column, Type string
}

// Migrations is the schema, in order. Versions are never reused or
// reordered; a change to the schema is a new step at the end.
var Migrations = []Migration{
	{Version: 1, Name: "verdicts", Statements: []string{ddlVerdicts}},
	{Version: 2, Name: "fuse_commands", Statements: []string{ddlFuseCommands}},
	{Version: 3, Name: "span_rollups", Statements: []string{ddlRollups, ddlRollupsInput, ddlRollupsView}},
	{Version: 4, Name: "span_rollups_ttl", MinServer: ServerVersion{Major: 19, Minor: 6}, Statements: []string{ddlRollupsTTL}},
	{Version: 5, Name: "span_rollups_token_kinds", Columns: rollupsTokenKindsColumns,
		Statements: []string{ddlDropRollupsView, ddlDropRollupsInput, ddlRollupsInputV2, ddlRollupsViewV2}},
	{Version: 6, Name: "fuse_effects", Statements: []string{ddlEffectsView}},
	{Version: 7, Name: "span_rollups_failed_answers", Columns: rollupsFailedAnswersColumns,
		Statements: []string{ddlDropRollupsView, ddlDropRollupsInput, ddlRollupsInputV3, ddlRollupsViewV3}},
	{Version: 8, Name: "incidents", Statements: []string{ddlIncidents, ddlIncidentsView}},
}

// MigrateConfig tunes Migrate.
type MigrateConfig struct {
	// RollupRetentionDays is the TTL of span_rollups rows on servers that
	// support TTL (default 90). It takes effect when the TTL step is
	// applied; changing it later needs a new migration.
	RollupRetentionDays int
}

// DefaultMigrateConfig returns the defaults documented on MigrateConfig.
func DefaultMigrateConfig() MigrateConfig { return MigrateConfig{RollupRetentionDays: 90} }

// Outcome is what Migrate did with one step.
type Outcome string

const (
	OutcomeApplied        Outcome = "applied"         // run now
	OutcomeSkipped        Outcome = "skipped"         // not supported by this server; recorded as skipped now
	OutcomeAlreadyApplied Outcome = "already applied" // recorded as applied by an earlier run
	OutcomeAlreadySkipped Outcome = "already skipped" // recorded as skipped and still unsupported
)

// MigrationResult reports one step of a Migrate run.
type MigrationResult struct {
	Version uint32
	Name    string
	Outcome Outcome
	// Reason says why a step was skipped.
	Reason string
}

// ErrUnknownMigration is wrapped when the database records a migration
// version this build does not know: a newer fusebox migrated it, and this
// one must not write to a schema it does not understand.
var ErrUnknownMigration = errors.New("clickhousesink: database has a migration unknown to this build")

// MigrationError says which step failed.
type MigrationError struct {
	Version   uint32
	Name      string
	Statement string // first line of the failing statement
	Err       error
}

func (e *MigrationError) Error() string {
	return fmt.Sprintf("clickhousesink: migration %d (%s): %s: %v", e.Version, e.Name, e.Statement, e.Err)
}
func (e *MigrationError) Unwrap() error { return e.Err }

// Migrate creates database db when missing and applies every migration not
// yet recorded in db.fusebox_schema_migrations, in order, with
// DefaultMigrateConfig. See MigrateWith.
func Migrate(ctx context.Context, conn driver.Conn, db string) ([]MigrationResult, error) {
	return MigrateWith(ctx, conn, db, DefaultMigrateConfig())
}

// MigrateWith creates database db when missing and brings its schema up to
// date. Each step runs at most once: it is recorded (version, name,
// status, applied_at, server_version) after its statements succeeded, and a
// recorded step is not run again, so running Migrate twice is a no-op. A
// step whose MinServer is newer than the server (TTL on 18.16) is recorded
// as skipped; after the server is upgraded, the next Migrate applies it.
// Steps are idempotent DDL, so one that failed half-way is safe to retry.
// Run one Migrate at a time per database: ClickHouse has no lock for it.
func MigrateWith(ctx context.Context, conn driver.Conn, db string, cfg MigrateConfig) ([]MigrationResult, error) {
	if !ValidIdentifier(db) {
		return nil, &ConfigError{Field: "database", Reason: fmt.Sprintf("%q: want letters, digits and underscores, not starting with a digit", db)}
	}
	if cfg.RollupRetentionDays < 1 {
		return nil, &ConfigError{Field: "rollup_retention_days", Reason: fmt.Sprintf("%d: must be at least 1", cfg.RollupRetentionDays)}
	}
	server, err := QueryServerVersion(ctx, conn)
	if err != nil {
		return nil, err
	}
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db); err != nil {
		return nil, fmt.Errorf("clickhousesink: create database %s: %w", db, err)
	}
	if err := conn.Exec(ctx, expand(ddlMigrations, db, cfg)); err != nil {
		return nil, fmt.Errorf("clickhousesink: create %s.%s: %w", db, TableMigrations, err)
	}
	recorded, err := recordedMigrations(ctx, conn, db)
	if err != nil {
		return nil, err
	}
	known := map[uint32]bool{}
	for _, m := range Migrations {
		known[m.Version] = true
	}
	for v := range recorded {
		if !known[v] {
			return nil, fmt.Errorf("%w: version %d in %s.%s", ErrUnknownMigration, v, db, TableMigrations)
		}
	}

	var results []MigrationResult
	for _, m := range Migrations {
		r := MigrationResult{Version: m.Version, Name: m.Name}
		status := recorded[m.Version]
		switch {
		case status == OutcomeApplied:
			r.Outcome = OutcomeAlreadyApplied
		case !server.AtLeast(m.MinServer):
			r.Reason = fmt.Sprintf("needs ClickHouse %s or newer, server is %s", m.MinServer, server)
			if status == OutcomeSkipped {
				r.Outcome = OutcomeAlreadySkipped
			} else {
				if err := recordMigration(ctx, conn, db, m, OutcomeSkipped, server); err != nil {
					return results, err
				}
				r.Outcome = OutcomeSkipped
			}
		default:
			if err := addColumns(ctx, conn, db, cfg, m); err != nil {
				return results, err
			}
			for _, stmt := range m.Statements {
				if err := conn.Exec(ctx, expand(stmt, db, cfg)); err != nil {
					first, _, _ := strings.Cut(strings.TrimSpace(stmt), "\n")
					return results, &MigrationError{Version: m.Version, Name: m.Name, Statement: first, Err: err}
				}
			}
			if err := recordMigration(ctx, conn, db, m, OutcomeApplied, server); err != nil {
				return results, err
			}
			r.Outcome = OutcomeApplied
		}
		results = append(results, r)
	}
	return results, nil
}

// addColumns adds the step's columns its tables do not have yet.
func addColumns(ctx context.Context, conn driver.Conn, db string, cfg MigrateConfig, m Migration) error {
	for _, c := range m.Columns {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
			db, c.Table, c.Column).Scan(&n); err != nil {
			return &MigrationError{Version: m.Version, Name: m.Name, Statement: "SELECT count() FROM system.columns", Err: err}
		}
		if n > 0 {
			continue
		}
		stmt := "ALTER TABLE {db}." + c.Table + " ADD COLUMN " + c.Column + " " + c.Type
		if err := conn.Exec(ctx, expand(stmt, db, cfg)); err != nil {
			return &MigrationError{Version: m.Version, Name: m.Name, Statement: "ALTER TABLE " + c.Table + " ADD COLUMN " + c.Column, Err: err}
		}
	}
	return nil
}

// recordedMigrations returns the recorded status per version; applied wins
// over skipped (a step skipped on an old server and applied after an
// upgrade has both rows).
func recordedMigrations(ctx context.Context, conn driver.Conn, db string) (map[uint32]Outcome, error) {
	rows, err := conn.Query(ctx, "SELECT version, status FROM "+db+"."+TableMigrations)
	if err != nil {
		return nil, fmt.Errorf("clickhousesink: read %s.%s: %w", db, TableMigrations, err)
	}
	defer rows.Close()
	out := map[uint32]Outcome{}
	for rows.Next() {
		var v uint32
		var s string
		if err := rows.Scan(&v, &s); err != nil {
			return nil, fmt.Errorf("clickhousesink: read %s.%s: %w", db, TableMigrations, err)
		}
		if Outcome(s) == OutcomeApplied || out[v] == "" {
			out[v] = Outcome(s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clickhousesink: read %s.%s: %w", db, TableMigrations, err)
	}
	return out, nil
}

func recordMigration(ctx context.Context, conn driver.Conn, db string, m Migration, status Outcome, server ServerVersion) error {
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+"."+TableMigrations+" (version, name, status, applied_at, server_version)")
	if err != nil {
		return fmt.Errorf("clickhousesink: record migration %d: %w", m.Version, err)
	}
	if err := b.Append(m.Version, m.Name, string(status), time.Now().UTC(), server.String()); err != nil {
		b.Abort()
		return fmt.Errorf("clickhousesink: record migration %d: %w", m.Version, err)
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("clickhousesink: record migration %d: %w", m.Version, err)
	}
	return nil
}

// ServerVersion is a ClickHouse release number, e.g. 18.16.1 or 24.8.4.
type ServerVersion struct {
	Major, Minor, Patch int
	// Raw is what SELECT version() returned ("" when built by hand).
	Raw string
}

// AtLeast reports whether v is min or newer (comparing major, minor,
// patch); the zero min is met by every version.
func (v ServerVersion) AtLeast(min ServerVersion) bool {
	if v.Major != min.Major {
		return v.Major > min.Major
	}
	if v.Minor != min.Minor {
		return v.Minor > min.Minor
	}
	return v.Patch >= min.Patch
}

func (v ServerVersion) String() string {
	if v.Raw != "" {
		return v.Raw
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// ParseServerVersion reads "MAJOR.MINOR[.PATCH[.BUILD]]" as SELECT
// version() returns it.
func ParseServerVersion(s string) (ServerVersion, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) < 2 {
		return ServerVersion{}, fmt.Errorf("clickhousesink: server version %q: want MAJOR.MINOR[.PATCH]", s)
	}
	var nums [3]int
	for i := 0; i < len(parts) && i < 3; i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 {
			return ServerVersion{}, fmt.Errorf("clickhousesink: server version %q: part %d is not a number", s, i+1)
		}
		nums[i] = n
	}
	return ServerVersion{Major: nums[0], Minor: nums[1], Patch: nums[2], Raw: strings.TrimSpace(s)}, nil
}

// QueryServerVersion asks the server for its version (SELECT version()).
func QueryServerVersion(ctx context.Context, conn driver.Conn) (ServerVersion, error) {
	var s string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&s); err != nil {
		return ServerVersion{}, fmt.Errorf("clickhousesink: SELECT version(): %w", err)
	}
	return ParseServerVersion(s)
}
