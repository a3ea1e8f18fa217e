package clickhousesink

import (
	"strconv"
	"strings"
)

// The schema, as versioned migrations. Every statement is valid on
// ClickHouse 18.16 (Debian's) and on current servers: no DateTime64, Map,
// Bool, JSON or LowCardinality types, no TTL or CODEC except in steps gated
// on a detected server version, and CREATE ... IF NOT EXISTS so that a step
// interrupted half-way can simply run again.
//
// Times are DateTime('UTC') (second resolution, hour and day buckets in UTC
// whatever the server's timezone) beside the exact Int64 unix nanoseconds.
// Verdict details are parallel arrays detail_names / detail_values in the
// processor's order.
//
// Idempotence (a replay must not count twice):
//   - verdicts: ReplacingMergeTree ORDER BY (processor, window_end, id). The
//     id is a hash of processor, SLO, metric, key, window end and config
//     version, so processor and window_end are functions of the id and this
//     key collapses exactly the rows with the same id — while reports, which
//     all filter on a processor and a time range, read a contiguous range.
//     The partition (month of window_end) is also a function of the id, so
//     duplicates always meet in one partition.
//   - fuse_commands: ReplacingMergeTree ORDER BY (target, version).
//   - span_rollups: the engine writes one row per (key, minute) when the
//     minute closes; a replay writes the same row again. The rows go into
//     the Null-engine table span_rollups_input; the materialized view turns
//     each input row into exactly one row of span_rollups — no GROUP BY, the
//     latency digests are built per row with arrayReduce('…State', array) —
//     and span_rollups is a ReplacingMergeTree ORDER BY (tenant, service,
//     model, variant, minute), so a replayed (key, minute) replaces instead of
//     adding. An AggregatingMergeTree would sum the replay in; a GROUP BY in
//     the view would sum duplicates that arrive in the same insert block.
//     Readers use FINAL, then sum() / quantilesTDigestMerge across minutes.
//
// Reads must use FINAL on these three tables until background merges have
// collapsed the duplicates.

// QuantileLevels are the levels the span_rollups latency digests are
// declared with. Read them with quantilesTDigestMerge(QuantileLevelsSQL)
// and index the resulting array (1-based in SQL).
var QuantileLevels = []float64{0.5, 0.9, 0.99, 0.999}

// QuantileLevelsSQL is QuantileLevels as written in the DDL.
const QuantileLevelsSQL = "0.5, 0.9, 0.99, 0.999"

// Table names inside the fusebox database.
const (
	TableMigrations   = "fusebox_schema_migrations"
	TableVerdicts     = "verdicts"
	TableFuseCommands = "fuse_commands"
	TableRollups      = "span_rollups"
	TableRollupsInput = "span_rollups_input"
	ViewRollups       = "span_rollups_mv"
	ViewEffects       = "fuse_effects"
	TableIncidents    = "incidents"
	ViewIncidents     = "incidents_latest"
)

const ddlMigrations = `CREATE TABLE IF NOT EXISTS {db}.fusebox_schema_migrations (
    version        UInt32,
    name           String,
    status         String,
    applied_at     DateTime('UTC'),
    server_version String
) ENGINE = MergeTree
ORDER BY (version, applied_at)`

const ddlVerdicts = `CREATE TABLE IF NOT EXISTS {db}.verdicts (
    id                     String,
    processor              String,
    slo                    String,
    metric                 String,
    tenant                 String,
    service                String,
    model                  String,
    variant                String,
    window_start           DateTime('UTC'),
    window_end             DateTime('UTC'),
    window_start_unix_nano Int64,
    window_end_unix_nano   Int64,
    value                  Float64,
    threshold              Float64,
    lower                  Float64,
    upper                  Float64,
    interval_level         Float64,
    status                 String,
    method                 String,
    n                      Int64,
    detail_names           Array(String),
    detail_values          Array(Float64),
    config_version         String,
    inserted_at            DateTime('UTC') DEFAULT now()
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(window_end)
ORDER BY (processor, window_end, id)`

const ddlFuseCommands = `CREATE TABLE IF NOT EXISTS {db}.fuse_commands (
    target               String,
    target_tenant        String,
    target_service       String,
    target_model         String,
    target_variant       String,
    version              UInt64,
    action               String,
    level                Int32,
    state                String,
    issued_at            DateTime('UTC'),
    issued_at_unix_nano  Int64,
    expires_at           DateTime('UTC'),
    expires_at_unix_nano Int64,
    fallback             String,
    throttle_fraction    Float64,
    reason_verdict_ids   Array(String),
    reason_texts         Array(String),
    correlation_ids      Array(String),
    key_id               String,
    signature            String,
    inserted_at          DateTime('UTC') DEFAULT now()
) ENGINE = ReplacingMergeTree
ORDER BY (target, version)`

const ddlRollups = `CREATE TABLE IF NOT EXISTS {db}.span_rollups (
    tenant           String,
    service          String,
    model            String,
    variant          String,
    minute           DateTime('UTC'),
    minute_unix_nano Int64,
    spans            UInt64,
    errors           UInt64,
    input_tokens     UInt64,
    output_tokens    UInt64,
    corrections      UInt64,
    late_spans       UInt64,
    duration_samples UInt64,
    ttft_samples     UInt64,
    duration_ms_q    AggregateFunction(quantilesTDigest({levels}), Float64),
    ttft_ms_q        AggregateFunction(quantilesTDigest({levels}), Float64)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (tenant, service, model, variant, minute)`

const ddlRollupsInput = `CREATE TABLE IF NOT EXISTS {db}.span_rollups_input (
    tenant           String,
    service          String,
    model            String,
    variant          String,
    minute           DateTime('UTC'),
    minute_unix_nano Int64,
    spans            UInt64,
    errors           UInt64,
    input_tokens     UInt64,
    output_tokens    UInt64,
    corrections      UInt64,
    late_spans       UInt64,
    durations_ms     Array(Float64),
    ttfts_ms         Array(Float64)
) ENGINE = Null`

const ddlRollupsView = `CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.span_rollups_mv TO {db}.span_rollups AS
SELECT
    tenant, service, model, variant, minute, minute_unix_nano,
    spans, errors, input_tokens, output_tokens, corrections, late_spans,
    toUInt64(length(durations_ms)) AS duration_samples,
    toUInt64(length(ttfts_ms)) AS ttft_samples,
    arrayReduce('quantilesTDigestState({levels})', durations_ms) AS duration_ms_q,
    arrayReduce('quantilesTDigestState({levels})', ttfts_ms) AS ttft_ms_q
FROM {db}.span_rollups_input`

// Migration 5 (span_rollups_token_kinds) adds the cache read, cache write
// and reasoning token sums and a TPOT digest. span_rollups gains the columns
// by ALTER TABLE ADD COLUMN, each run only when system.columns does not show
// it yet (18.16 has no ADD COLUMN IF NOT EXISTS), so a step interrupted
// half-way can run again. The Null input table holds nothing, so it and the
// view are dropped and created again with the new columns.
var rollupsTokenKindsColumns = []AddColumn{
	{Table: TableRollups, Column: "cache_read_tokens", Type: "UInt64"},
	{Table: TableRollups, Column: "cache_write_tokens", Type: "UInt64"},
	{Table: TableRollups, Column: "reasoning_tokens", Type: "UInt64"},
	{Table: TableRollups, Column: "tpot_samples", Type: "UInt64"},
	{Table: TableRollups, Column: "tpot_ms_q", Type: "AggregateFunction(quantilesTDigest({levels}), Float64)"},
}

const ddlDropRollupsView = `DROP TABLE IF EXISTS {db}.span_rollups_mv`

const ddlDropRollupsInput = `DROP TABLE IF EXISTS {db}.span_rollups_input`

const ddlRollupsInputV2 = `CREATE TABLE IF NOT EXISTS {db}.span_rollups_input (
    tenant             String,
    service            String,
    model              String,
    variant            String,
    minute             DateTime('UTC'),
    minute_unix_nano   Int64,
    spans              UInt64,
    errors             UInt64,
    input_tokens       UInt64,
    output_tokens      UInt64,
    cache_read_tokens  UInt64,
    cache_write_tokens UInt64,
    reasoning_tokens   UInt64,
    corrections        UInt64,
    late_spans         UInt64,
    durations_ms       Array(Float64),
    ttfts_ms           Array(Float64),
    tpots_ms           Array(Float64)
) ENGINE = Null`

const ddlRollupsViewV2 = `CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.span_rollups_mv TO {db}.span_rollups AS
SELECT
    tenant, service, model, variant, minute, minute_unix_nano,
    spans, errors, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
    corrections, late_spans,
    toUInt64(length(durations_ms)) AS duration_samples,
    toUInt64(length(ttfts_ms)) AS ttft_samples,
    toUInt64(length(tpots_ms)) AS tpot_samples,
    arrayReduce('quantilesTDigestState({levels})', durations_ms) AS duration_ms_q,
    arrayReduce('quantilesTDigestState({levels})', ttfts_ms) AS ttft_ms_q,
    arrayReduce('quantilesTDigestState({levels})', tpots_ms) AS tpot_ms_q
FROM {db}.span_rollups_input`

// Migration 6 (fuse_effects) is a plain view over the effect verdicts
// (processor 'effect', see processors/effect), which are rows of verdicts
// like any other (one id per judged command, so a replay collapses there):
// one row per judged command with the details as columns. It reads
// verdicts FINAL, so duplicates not merged yet count once. Join it to
// fuse_commands on the target dimensions and version. before_value and
// after_value, not before/after: keywords on some servers.
const ddlEffectsView = `CREATE VIEW IF NOT EXISTS {db}.fuse_effects AS
SELECT
    id,
    slo,
    metric,
    tenant  AS target_tenant,
    service AS target_service,
    model   AS target_model,
    variant AS target_variant,
    toUInt64(detail_values[indexOf(detail_names, 'command_version')]) AS command_version,
    toInt32(detail_values[indexOf(detail_names, 'command_level')]) AS command_level,
    splitByChar(':', method)[1] AS action,
    splitByChar(':', method)[2] AS outcome,
    status,
    toUInt8(detail_values[indexOf(detail_names, 'recovered')]) AS recovered,
    detail_values[indexOf(detail_names, 'before')] AS before_value,
    detail_values[indexOf(detail_names, 'after')] AS after_value,
    toUInt8(detail_values[indexOf(detail_names, 'after_status')]) AS after_status,
    threshold,
    toUInt32(detail_values[indexOf(detail_names, 'evaluations')]) AS evaluations,
    toUInt32(detail_values[indexOf(detail_names, 'max_evaluations')]) AS max_evaluations,
    toUInt32(detail_values[indexOf(detail_names, 'evaluations_with_traffic')]) AS evaluations_with_traffic,
    toUInt32(detail_values[indexOf(detail_names, 'scope_keys')]) AS scope_keys,
    toUInt64(detail_values[indexOf(detail_names, 'superseded_by')]) AS superseded_by,
    n,
    window_start           AS issued_at,
    window_start_unix_nano AS issued_at_unix_nano,
    window_end             AS decided_at,
    window_end_unix_nano   AS decided_at_unix_nano,
    config_version
FROM {db}.verdicts FINAL
WHERE processor = 'effect'`

// Migration 7 (span_rollups_failed_answers) adds the failed answers
// (schemas.Rollup.FailedAnswers: calls that succeeded with an answer cut
// off, filtered or empty) and three of their reasons, as migration 5 added
// the token kinds: span_rollups gains the columns by ALTER TABLE ADD
// COLUMN, each run only when system.columns does not show it yet, and the
// Null input table and the view are made again with them. Rows written
// before read 0.
var rollupsFailedAnswersColumns = []AddColumn{
	{Table: TableRollups, Column: "failed_answers", Type: "UInt64"},
	{Table: TableRollups, Column: "failed_length", Type: "UInt64"},
	{Table: TableRollups, Column: "failed_content_filter", Type: "UInt64"},
	{Table: TableRollups, Column: "empty_answers", Type: "UInt64"},
}

const ddlRollupsInputV3 = `CREATE TABLE IF NOT EXISTS {db}.span_rollups_input (
    tenant                String,
    service               String,
    model                 String,
    variant               String,
    minute                DateTime('UTC'),
    minute_unix_nano      Int64,
    spans                 UInt64,
    errors                UInt64,
    input_tokens          UInt64,
    output_tokens         UInt64,
    cache_read_tokens     UInt64,
    cache_write_tokens    UInt64,
    reasoning_tokens      UInt64,
    corrections           UInt64,
    late_spans            UInt64,
    failed_answers        UInt64,
    failed_length         UInt64,
    failed_content_filter UInt64,
    empty_answers         UInt64,
    durations_ms          Array(Float64),
    ttfts_ms              Array(Float64),
    tpots_ms              Array(Float64)
) ENGINE = Null`

const ddlRollupsViewV3 = `CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.span_rollups_mv TO {db}.span_rollups AS
SELECT
    tenant, service, model, variant, minute, minute_unix_nano,
    spans, errors, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
    corrections, late_spans, failed_answers, failed_length, failed_content_filter, empty_answers,
    toUInt64(length(durations_ms)) AS duration_samples,
    toUInt64(length(ttfts_ms)) AS ttft_samples,
    toUInt64(length(tpots_ms)) AS tpot_samples,
    arrayReduce('quantilesTDigestState({levels})', durations_ms) AS duration_ms_q,
    arrayReduce('quantilesTDigestState({levels})', ttfts_ms) AS ttft_ms_q,
    arrayReduce('quantilesTDigestState({levels})', tpots_ms) AS tpot_ms_q
FROM {db}.span_rollups_input`

// ddlRollupsTTL drops per-minute rollups after the retention; TTL exists
// from ClickHouse 19.6 on.
const ddlRollupsTTL = `ALTER TABLE {db}.span_rollups MODIFY TTL minute + INTERVAL {days} DAY`

// expand fills in the database name (already checked by ValidIdentifier),
// the quantile levels and the retention.
func expand(stmt, db string, cfg MigrateConfig) string {
	return strings.NewReplacer(
		"{db}", db,
		"{levels}", QuantileLevelsSQL,
		"{days}", strconv.Itoa(cfg.RollupRetentionDays),
	).Replace(stmt)
}

// ddlIncidents holds the incident stage's records (schemas.Incident), one
// row per incident per evaluation; a replay writes the same id again,
// collapsed by ReplacingMergeTree on (slo, incident_id, at_unix_nano, id)
// — at and the incident are functions of the id, so duplicates meet.
// Keys are the breaching keys listed (capped by incidents.max_keys) as
// four parallel arrays.
const ddlIncidents = `CREATE TABLE IF NOT EXISTS {db}.incidents (
    id                  String,
    incident_id         String,
    slo                 String,
    processor           String,
    dimension           String,
    value               String,
    status              String,
    breaching           Int64,
    healthy             Int64,
    other_breaching     Int64,
    other_healthy       Int64,
    p_value             Float64,
    first_at            DateTime('UTC'),
    first_unix_nano     Int64,
    last_at             DateTime('UTC'),
    last_unix_nano      Int64,
    at                  DateTime('UTC'),
    at_unix_nano        Int64,
    key_tenants         Array(String),
    key_services        Array(String),
    key_models          Array(String),
    key_variants        Array(String),
    merged_into         String,
    partial             UInt8,
    config_version      String,
    inserted_at         DateTime('UTC') DEFAULT now()
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (slo, incident_id, at_unix_nano, id)`

// ddlIncidentsView is one row per incident: its level, when it opened and
// when it was last attributed, its newest record's status, the most
// breaching keys any record counted, and the smallest p-value. Read it
// over FINAL of the table (the view's SELECT says FINAL, so duplicates do
// not count).
const ddlIncidentsView = `CREATE VIEW IF NOT EXISTS {db}.incidents_latest AS
SELECT
    incident_id,
    any(slo)                       AS slo,
    any(processor)                 AS processor,
    any(dimension)                 AS dimension,
    any(value)                     AS value,
    min(first_at)                  AS first_at,
    max(last_at)                   AS last_at,
    max(at)                        AS updated_at,
    argMax(status, at_unix_nano)   AS status,
    max(breaching)                 AS max_breaching,
    min(p_value)                   AS min_p_value,
    count()                        AS records,
    max(merged_into)               AS merged_into
FROM {db}.incidents FINAL
GROUP BY incident_id`
