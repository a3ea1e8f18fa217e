package ingest

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// The spans that look like LLM calls but cannot be keyed
// (schemas.DecodeStats.Unkeyed) are never skipped silently: they are
// counted by instrumentation scope and reason (Stats.Unkeyed, the
// fusebox_spans_unkeyed_total counter), the first of each (scope, reason)
// is logged with what the span had and what fusebox needs, and then one
// line per RejectLogEvery with the count while more come.

// UnkeyedCount is the number of spans of one instrumentation scope skipped
// for one reason although they looked like LLM calls.
type UnkeyedCount struct {
	Scope  string // the scope name; schemas.UnkeyedOtherScope past the cap
	Reason string // schemas.UnkeyedNoModel or schemas.UnkeyedNotLLMKind
	Count  int64
}

// unkeyedLog is the consumer-wide tally: partitions of the same topics
// share scopes, and the labels it hands out are bounded to
// schemas.MaxUnkeyedScopes scopes (further ones count as schemas.UnkeyedOtherScope, "(other)").
type unkeyedLog struct {
	every  time.Duration
	mu     sync.Mutex
	counts map[unkeyedKey]*unkeyedTally
	scopes map[string]bool
}

type unkeyedKey struct{ scope, reason string }

type unkeyedTally struct {
	total int64
	since time.Time // start of the current log interval
	n     int64     // counted in it, after the first line
}

// unkeyedNeeds says, per reason, what fusebox needs to key such a span.
var unkeyedNeeds = map[string]string{
	schemas.UnkeyedNoModel: "a model: gen_ai.request.model or gen_ai.response.model " +
		"(OpenInference: the \"model\" of llm.invocation_parameters, or llm.model_name)",
	schemas.UnkeyedNotLLMKind: "openinference.span.kind LLM or EMBEDDING: spans of other kinds " +
		"(CHAIN, TOOL, RETRIEVER, AGENT, ...) are not LLM calls and are skipped",
}

// noteUnkeyed counts the unkeyed spans of record r (decoded at now).
func (c *Consumer) noteUnkeyed(r *Record, unkeyed []schemas.UnkeyedSpans, now time.Time) {
	l := &c.unkeyed
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts, l.scopes = map[unkeyedKey]*unkeyedTally{}, map[string]bool{}
	}
	for _, u := range unkeyed {
		scope := u.Scope
		if !l.scopes[scope] {
			if len(l.scopes) >= schemas.MaxUnkeyedScopes {
				scope = schemas.UnkeyedOtherScope
			} else {
				l.scopes[scope] = true
			}
		}
		k := unkeyedKey{scope, u.Reason}
		t := l.counts[k]
		// OpenInference's chains and tools are expected next to its LLM
		// spans: said once at INFO, counted at DEBUG.
		level := slog.LevelWarn
		if u.Reason == schemas.UnkeyedNotLLMKind {
			level = slog.LevelInfo
		}
		if t == nil {
			l.counts[k] = &unkeyedTally{total: int64(u.Count), since: now, n: 0}
			c.log.Log(context.Background(), level, "ingest: spans look like LLM calls but cannot be keyed, skipped (the first of this scope and reason; later ones are counted per interval)",
				"scope", u.Scope, "reason", u.Reason, "spans", u.Count, "attributes", strings.Join(u.Attributes, ","),
				"needs", unkeyedNeeds[u.Reason], "topic", r.Topic, "partition", r.Partition, "offset", r.Offset)
			continue
		}
		t.total += int64(u.Count)
		t.n += int64(u.Count)
		if d := now.Sub(t.since); d >= l.every && t.n > 0 {
			if level == slog.LevelInfo {
				level = slog.LevelDebug
			}
			c.log.Log(context.Background(), level, "ingest: spans still unkeyed",
				"scope", scope, "reason", u.Reason, "count", t.n, "interval", d.Round(time.Second).String(),
				"total", t.total, "needs", unkeyedNeeds[u.Reason], "topic", r.Topic, "last_offset", r.Offset)
			t.since, t.n = now, 0
		}
	}
}

// unkeyedCounts returns the tally, sorted by scope then reason.
func (l *unkeyedLog) unkeyedCounts() []UnkeyedCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]UnkeyedCount, 0, len(l.counts))
	for k, t := range l.counts {
		out = append(out, UnkeyedCount{Scope: k.scope, Reason: k.reason, Count: t.total})
	}
	slices.SortFunc(out, func(a, b UnkeyedCount) int {
		if c := strings.Compare(a.Scope, b.Scope); c != 0 {
			return c
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return out
}
