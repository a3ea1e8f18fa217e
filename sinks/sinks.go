// Package sinks holds what the concrete sinks of the engine's Output share:
// the stable JSON encoding of a verdict, retry backoff, and counters for
// /metrics. The interface they implement is engine.Sink (the engine is its
// consumer; package pipeline asserts that every sink implements it, so
// that no sink imports the engine).
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
	"errors"

	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrClosed is returned by Write and Flush after Close was called.
var ErrClosed = errors.New("sinks: sink closed")

// VerdictRecordKey is the Kafka record key of a verdict,
// "processor/tenant/service/model/variant" (schemas.Key.String for the key
// part): all evaluations of one processor on one key land in one partition,
// in order.
func VerdictRecordKey(v *schemas.Verdict) string {
	return v.Processor + "/" + v.Key.String()
}
