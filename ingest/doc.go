// Package ingest is fusebox's way in: a Kafka consumer group member
// (franz-go) over the span topics (OTLP, default "otlp_spans"), the
// correction topics (default "fusebox.corrections") and any topic given a
// custom Decoder. It decodes every record once, dead-letters what cannot be
// used, and hands the rest to one handler per partition, in order. Offsets
// move only when handlers acknowledge.
//
// The engine uses it twice: the router consumes the source topics and
// acknowledges a batch once the re-keyed records it produced are durable;
// the engine stage consumes the internal keyed topic with its own Decoder,
// restores a partition's state in Starter.Start and acknowledges only at
// checkpoints.
//
// What a handler receives and a decoder fills (Record, Batch, the
// PartitionHandler and Decoder contracts) is defined in package
// ingest/batch, which does not import the Kafka client, and re-exported
// here under the same names: the engine imports ingest/batch only.
//
// # Flow
//
// One poll loop fetches; for each partition it queues the records of the
// fetch as one batch for the partition's goroutine, which decodes them,
// starts the DLQ writes of the bad ones and calls the partition's
// PartitionHandler.Handle with the Batch. Partitions run in parallel; within
// a partition everything is sequential and in offset order. Rebalance
// callbacks run only between polls (kgo.BlockRebalanceOnPoll), so a fetch
// always goes to the handler that owned the partition when it was fetched.
//
// # The ack contract
//
//  1. A Batch covers the offsets [FirstOffset, NextOffset) of one partition:
//     every record fetched in it, including those sent whole to the DLQ
//     (counted in DeadLettered, absent from Records). A batch may have no
//     Records at all; it must be acknowledged like any other.
//  2. Batch.Ack may be called at any time after Handle received the batch,
//     from any goroutine, in any order across batches, any number of times
//     (the first call counts). Handle need not ack before returning: the
//     handler may keep batches and ack them later (at a checkpoint, when a
//     produce is durable).
//  3. A batch is done when it is acknowledged and every DLQ write it started
//     is acknowledged by the broker. The committable offset of a partition
//     is the NextOffset of the last batch of its contiguous done prefix:
//     a done batch behind an unacknowledged one commits nothing until the
//     earlier one is done.
//  4. Committable offsets are committed every CommitInterval (default 1s)
//     and synchronously when partitions are revoked and at shutdown. So a
//     record's offset is committed only after its batch and every earlier
//     batch of the partition were acknowledged and their dead letters are
//     durable: at-least-once. After a crash, what was acknowledged but not
//     yet committed (at most about one CommitInterval of acks) is delivered
//     again.
//  5. On revoke (a rebalance moves the partition away) and at shutdown, in
//     this order: no new batch is handed out (queued ones are dropped; they
//     were never acknowledged), the in-flight Handle returns, Close(ctx,
//     reason) is called, pending DLQ writes are awaited, and the
//     committable offset is committed before the partition is handed over.
//     Handle's context is canceled only when this outlasts CloseTimeout
//     (default 20s). Acks arriving after Close returns are ignored: what
//     they covered is redelivered to the next owner. So Close should ack
//     everything the handler has finished, and not start new work.
//  6. When a partition is lost (the session expired; another member may own
//     it already) Handle's context is canceled at once, Close(ctx,
//     CloseLost) is called, and nothing is committed.
//  7. A batch that is never acknowledged is delivered again to whichever
//     member owns the partition next (this process after a restart, or
//     another member after a rebalance): the partition restarts at its
//     committed offset, the FirstOffset of its earliest batch not done, so
//     done batches after that one come again too (unless a Starter chooses
//     another offset). Handlers must therefore tolerate seeing a record
//     twice; fusebox's sinks are idempotent by design (deterministic verdict
//     ids). Order holds within a partition, not across partitions or topics.
//  8. A Handle error is fatal: Run stops consuming, closes every partition
//     (CloseShutdown, so acknowledged work is committed) and returns a
//     *HandlerError.
//
// # Back-pressure
//
// Records handed out (or queued) and not yet done count against
// MaxUnackedRecords and MaxUnackedBytes per partition. When either bound is
// reached the partition's fetching is paused (kgo PauseFetchPartitions);
// other partitions keep flowing. It resumes when acks bring it below. A
// handler that acks only at checkpoints must allow for a checkpoint
// interval's worth of records in these bounds, or it stalls itself until the
// next checkpoint.
//
// # Dead letters
//
// A record goes whole to the DLQ topic (default "fusebox.dlq") when its
// value exceeds Limits.MaxMessageBytes (checked before decoding), when its
// decoder returns an error (ErrTooLarge from the other limits, ErrMalformed,
// ErrInvalid) or panics (recovered, kind malformed, logged with the stack).
// A span record of which some spans fail Span.Validate is delivered with
// the valid spans and also dead-lettered with fusebox.dlq.partial=true and
// the invalid spans' indexes and reasons. The DLQ record keeps the key,
// value and headers unchanged and adds the headers listed with HeaderError.
// The write uses the client's idempotent producer; failures are retried with
// backoff and hold back the commit of the source partition, so no bad
// record is ever skipped without a trace. A record the DLQ topic refuses as
// too large is written again without its largest part — value, own headers
// or key (HeaderValueOmitted, HeaderHeadersOmitted, HeaderKeyOmitted) —
// until it fits, then with fusebox's headers cut (HeaderTrimmed); one
// refused even then is given up, logged at ERROR with its source offset and
// counted (Stats.DLQUnwritable), so that a write that cannot succeed never
// stalls its partition.
// Records that decode to zero LLM spans are not errors: they are delivered
// with empty Spans and their Stats, so their offsets advance.
package ingest
