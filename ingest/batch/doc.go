// Package batch is what the Kafka consumer of package ingest hands its
// partition handlers and asks of its decoders, without the Kafka client:
// decoded records (Record) in batches (Batch) with their ack, the
// PartitionHandler contract with its optional Starter and Idler, and the
// Decoder contract with its PartialError. Package ingest re-exports every
// name (ingest.Batch is batch.Batch, and so on); the engine imports this
// package instead, so that it does not depend on franz-go
// (internal/layout's test checks that it does not).
//
// The contract in full (ordering, acknowledgement, back-pressure, the DLQ)
// is package ingest's documentation.
package batch
