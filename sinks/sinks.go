// Package sinks defines what the engine writes its results through — the
// Sink interface — and what the concrete sinks share: the stable JSON
// encoding of a verdict, retry backoff, and counters for /metrics.
//
// The concrete sinks live in subpackages: kafkasink (verdicts to
// fusebox.verdicts, fuse commands to the compacted fusebox.fuse) and
// clickhousesink (verdicts, fuse commands and per-minute span rollups, with
// the versioned schema migrations).
//
// Delivery contract, shared by every sink: Write may buffer and blocks while
// the sink's bounded buffer is full (back-pressure, never unbounded memory,
// never a dropped record); Flush returns nil only once everything written
// before it is durable, retrying transient failures until its context ends.
// The engine commits input offsets only after every sink's Flush returned
// nil, so delivery is at-least-once; verdict ids are deterministic and both
// sinks collapse replays (Kafka consumers and ClickHouse's ReplacingMergeTree
// by id).
package sinks

import (
	"context"
	"errors"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Sink is one destination of the engine's Output.
type Sink interface {
	// Write hands one Output to the sink. It may buffer. It blocks while the
	// sink's bounded buffer is full (back-pressure) and returns an error only
	// when ctx ends or the sink is closed / permanently misconfigured.
	//
	// The sink keeps references to the slices inside out until they are
	// durable: the caller must not modify them after Write.
	Write(ctx context.Context, out schemas.Output) error
	// Flush returns nil once everything written before the call is durable
	// (Kafka: acked by the broker; ClickHouse: the insert succeeded).
	// Transient failures are retried with backoff until ctx ends.
	Flush(ctx context.Context) error
	// Close flushes what it can before ctx ends, then releases the sink's
	// connections. Records not durable by then are reported in the error.
	Close(ctx context.Context) error
}

// ErrClosed is returned by Write and Flush after Close was called.
var ErrClosed = errors.New("sinks: sink closed")

// VerdictRecordKey is the Kafka record key of a verdict,
// "processor/tenant/service/model/variant" (schemas.Key.String for the key
// part): all evaluations of one processor on one key land in one partition,
// in order.
func VerdictRecordKey(v *schemas.Verdict) string {
	return v.Processor + "/" + v.Key.String()
}
