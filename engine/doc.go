// Package engine is fusebox's second stage: it turns the records of the
// keyed topic into verdicts and fuse commands, deterministically, and makes
// them durable before it commits.
//
// What the engine owns:
//
//   - Worker (worker.go): one per keyed partition, single-goroutine, no
//     locks. For each KeyedRecord it drops duplicates a restarted router
//     wrote again (by source position), advances the watermark (the
//     minimum over the source partitions of their newest event time, minus
//     the allowed lateness; watermark.go), counts late records, projects
//     each span onto the configured key dimensions (keys.go) behind the
//     cardinality guard (guard.go), feeds every SLO's processor whose
//     Match admits the key, evaluates the processors at every boundary the
//     watermark passes, and hands their verdicts to the Breaker, which
//     answers with fuse commands. Same records in the same order, same
//     output, bit for bit.
//   - Snapshots (snapshot.go): a worker's whole state, processors and
//     breaker included, as bytes; RestoreWorker continues from them
//     exactly as the original would have.
//   - Keyed (keyed.go): the stage around the workers: a Worker per
//     assigned partition, fed by an ingest consumer of the keyed topic; a
//     checkpoint every CheckpointEvery or CheckpointRecords flushes every
//     Sink, saves the snapshot to the StateStore and only then acknowledges
//     the records (at-least-once); commands are signed by the Signer first.
//
// What it does not own: the keyed-record format (package schemas:
// headers, keyed batches; DecodeKeyedRecord reads plain records, without
// Kafka client types), the processors (processors/...; chosen by
// processors/registry), the sinks and the state store (it takes the Sink,
// StateStore and Signer interfaces), the router that writes the keyed
// topic (engine/router), and the assembly of the stages from a
// configuration (package pipeline).
package engine
