package clickhousesink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"syscall"
	"time"

	chgo "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/fusebox-dev/fusebox/schemas"
)

// The INSERT statements name every column (18.16 needs the list; it also
// keeps inserts working when a later migration adds columns with defaults).
// Row data never goes into SQL text.
const (
	insertVerdicts = `INSERT INTO %s.verdicts (id, processor, slo, metric, tenant, service, model, variant,
 window_start, window_end, window_start_unix_nano, window_end_unix_nano,
 value, threshold, lower, upper, interval_level, status, method, n,
 detail_names, detail_values, config_version)`
	insertCommands = `INSERT INTO %s.fuse_commands (target, target_tenant, target_service, target_model, target_variant,
 version, action, level, state, issued_at, issued_at_unix_nano, expires_at, expires_at_unix_nano,
 fallback, throttle_fraction, reason_verdict_ids, reason_texts, correlation_ids, key_id, signature)`
	insertIncidents = `INSERT INTO %s.incidents (id, incident_id, slo, processor, dimension, value, status,
 breaching, healthy, other_breaching, other_healthy, p_value, first_at, first_unix_nano, last_at, last_unix_nano, at, at_unix_nano,
 key_tenants, key_services, key_models, key_variants, merged_into, partial, config_version)`
	insertRollups = `INSERT INTO %s.span_rollups_input (tenant, service, model, variant, minute, minute_unix_nano,
 spans, errors, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
 corrections, late_spans, failed_answers, failed_length, failed_content_filter, empty_answers,
 durations_ms, ttfts_ms, tpots_ms)`
)

func unixTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// InsertVerdicts inserts verdicts into db.verdicts in one batch.
func InsertVerdicts(ctx context.Context, conn driver.Conn, db string, vs []schemas.Verdict) error {
	return insert(ctx, conn, insertVerdicts, db, vs, func(v *schemas.Verdict) []any {
		names, values := columns(v.Details, func(d schemas.Detail) (string, float64) { return d.Name, d.Value })
		return []any{v.ID, v.Processor, v.SLO, v.Metric, v.Key.Tenant, v.Key.Service, v.Key.Model, v.Key.Variant,
			unixTime(v.WindowStartUnixNano), unixTime(v.WindowEndUnixNano), v.WindowStartUnixNano, v.WindowEndUnixNano,
			v.Value, v.Threshold, v.Lower, v.Upper, v.IntervalLevel, string(v.Status), v.Method, v.N,
			names, values, v.ConfigVersion}
	})
}

// InsertCommands inserts fuse commands into db.fuse_commands in one batch.
func InsertCommands(ctx context.Context, conn driver.Conn, db string, cs []schemas.FuseCommand) error {
	return insert(ctx, conn, insertCommands, db, cs, func(c *schemas.FuseCommand) []any {
		ids, texts := columns(c.Reasons, func(r schemas.Reason) (string, string) { return r.VerdictID, r.Text })
		return []any{c.Target.String(), c.Target.Tenant, c.Target.Service, c.Target.Model, c.Target.Variant,
			c.Version, string(c.Action), int32(c.Level), string(c.State),
			unixTime(c.IssuedAtUnixNano), c.IssuedAtUnixNano, unixTime(c.ExpiresAtUnixNano), c.ExpiresAtUnixNano,
			c.Fallback, c.ThrottleFraction, ids, texts, nonNil(c.CorrelationIDs), c.KeyID, c.Signature}
	})
}

// InsertIncidents inserts incident records into db.incidents.
func InsertIncidents(ctx context.Context, conn driver.Conn, db string, is []schemas.Incident) error {
	return insert(ctx, conn, insertIncidents, db, is, func(i *schemas.Incident) []any {
		ts, ss, ms, vs := make([]string, len(i.Keys)), make([]string, len(i.Keys)), make([]string, len(i.Keys)), make([]string, len(i.Keys))
		for j, k := range i.Keys {
			ts[j], ss[j], ms[j], vs[j] = k.Tenant, k.Service, k.Model, k.Variant
		}
		return []any{i.ID, i.IncidentID, i.SLO, i.Processor, i.Dimension, i.Value, string(i.Status),
			i.Breaching, i.Healthy, i.OtherBreaching, i.OtherHealthy, i.PValue,
			unixTime(i.FirstUnixNano), i.FirstUnixNano, unixTime(i.LastUnixNano), i.LastUnixNano, unixTime(i.AtUnixNano), i.AtUnixNano,
			ts, ss, ms, vs, i.MergedInto, boolUInt8(i.Partial), i.ConfigVersion}
	})
}

// InsertRollups inserts rollups into db.span_rollups_input, from where the
// materialized view writes db.span_rollups.
func InsertRollups(ctx context.Context, conn driver.Conn, db string, rs []schemas.Rollup) error {
	return insert(ctx, conn, insertRollups, db, rs, func(r *schemas.Rollup) []any {
		return []any{r.Key.Tenant, r.Key.Service, r.Key.Model, r.Key.Variant,
			unixTime(r.MinuteUnixNano), r.MinuteUnixNano,
			uint64(r.N), uint64(r.Errors), uint64(r.InputTokens), uint64(r.OutputTokens),
			uint64(r.CacheReadTokens), uint64(r.CacheWriteTokens), uint64(r.ReasoningTokens),
			uint64(r.Corrections), uint64(r.LateSpans),
			uint64(r.FailedAnswers), uint64(r.FailedLength), uint64(r.FailedContentFilter), uint64(r.EmptyAnswers),
			nonNil(r.DurationsMs), nonNil(r.TTFTsMs), nonNil(r.TPOTsMs)}
	})
}

// insert prepares the batch of query (a format whose one %s is the
// database db), appends the columns row gives for each element of xs, and
// sends the batch. When an Append fails it aborts the batch and returns
// that error.
func insert[T any](ctx context.Context, conn driver.Conn, query, db string, xs []T, row func(*T) []any) error {
	b, err := conn.PrepareBatch(ctx, fmt.Sprintf(query, db))
	if err != nil {
		return err
	}
	for i := range xs {
		if err := b.Append(row(&xs[i])...); err != nil {
			b.Abort()
			return err
		}
	}
	return b.Send()
}

// columns splits xs into two Array columns (of len(xs), never nil).
func columns[T, A, B any](xs []T, split func(T) (A, B)) ([]A, []B) {
	as, bs := make([]A, len(xs)), make([]B, len(xs))
	for i, x := range xs {
		as[i], bs[i] = split(x)
	}
	return as, bs
}

// nonNil returns xs, or an empty slice for nil, so that an Array column is
// always given a slice (as it always was), never a nil one.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// validateRollup checks what the unsigned, minute-aligned columns need.
func validateRollup(r *schemas.Rollup) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"n", r.N}, {"errors", r.Errors}, {"input_tokens", r.InputTokens}, {"output_tokens", r.OutputTokens},
		{"cache_read_tokens", r.CacheReadTokens}, {"cache_write_tokens", r.CacheWriteTokens}, {"reasoning_tokens", r.ReasoningTokens},
		{"corrections", r.Corrections}, {"late_spans", r.LateSpans},
		{"failed_answers", r.FailedAnswers}, {"failed_length", r.FailedLength}, {"failed_content_filter", r.FailedContentFilter},
		{"empty_answers", r.EmptyAnswers}} {
		if f.v < 0 {
			return &schemas.FieldError{Field: f.name, Reason: fmt.Sprintf("%d: negative", f.v)}
		}
	}
	if r.MinuteUnixNano%int64(time.Minute) != 0 {
		return &schemas.FieldError{Field: "minute_unix_nano", Reason: fmt.Sprintf("%d: not the start of a minute", r.MinuteUnixNano)}
	}
	for name, xs := range map[string][]float64{"durations_ms": r.DurationsMs, "ttfts_ms": r.TTFTsMs, "tpots_ms": r.TPOTsMs} {
		for i, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return &schemas.FieldError{Field: fmt.Sprintf("%s[%d]", name, i), Reason: "not finite"}
			}
		}
	}
	return nil
}

// Exception codes that retrying cannot fix until an operator acts (schema
// missing or different, credentials, permissions). The sink keeps retrying
// them — the operator may run `fusebox migrate` — but reports them at once.
var permanentCodes = map[int32]string{
	10:  "NOT_FOUND_COLUMN_IN_BLOCK",
	16:  "NO_SUCH_COLUMN_IN_TABLE",
	47:  "UNKNOWN_IDENTIFIER",
	53:  "TYPE_MISMATCH",
	60:  "UNKNOWN_TABLE",
	81:  "UNKNOWN_DATABASE",
	164: "READONLY",
	192: "UNKNOWN_USER",
	193: "WRONG_PASSWORD",
	497: "ACCESS_DENIED",
	516: "AUTHENTICATION_FAILED",
}

// isPermanent reports whether err is a server exception that retrying
// cannot fix by itself.
func isPermanent(err error) bool {
	var ex *chgo.Exception
	if errors.As(err, &ex) {
		_, ok := permanentCodes[ex.Code]
		return ok
	}
	return false
}

// isConnectionError reports whether err looks like a broken or refused
// connection, after which the pool is reopened.
func isConnectionError(err error) bool {
	var ex *chgo.Exception
	if errors.As(err, &ex) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, chgo.ErrAcquireConnTimeout)
}

func boolUInt8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
