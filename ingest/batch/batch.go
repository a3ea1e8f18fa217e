package batch

import (
	"context"
	"strconv"
)

// Batch is the records of one fetch of one partition, in offset order,
// with the ack that releases them for commit. The records of one partition
// arrive in consecutive batches with increasing offsets.
type Batch struct {
	Topic     string
	Partition int32
	// Records are the records that decoded (fully or partially). Records
	// that went whole to the DLQ are not here; DeadLettered counts them.
	Records []Record
	// FirstOffset is the offset of the first record fetched in this batch
	// and NextOffset one past the last: the batch covers [FirstOffset,
	// NextOffset), including dead-lettered records. After Ack (and the
	// batch's DLQ writes), the group's committed offset may move to
	// NextOffset.
	FirstOffset, NextOffset int64
	// DeadLettered counts the records of the batch sent whole to the DLQ.
	DeadLettered int

	ack Acker
}

// Acker is what releases a batch for commit: the consumer that made the
// batch gives it one (SetAcker) before handing it to the handler.
type Acker interface {
	// Ack marks the batch done; it is idempotent.
	Ack()
	// Acked reports whether Ack was called.
	Acked() bool
}

// SetAcker gives b the Acker that Ack and Acked call. Only the consumer
// that made b calls it, before handing it over; a Batch without one (a
// test's) ignores Ack.
func (b *Batch) SetAcker(a Acker) { b.ack = a }

// Ack marks the batch done. The partition's committed offset moves to the
// batch's NextOffset once this and every earlier batch of the partition are
// acknowledged and their DLQ writes are durable. Ack is idempotent, may be
// called from any goroutine and in any order across batches, and is ignored
// after the partition's Close has returned. A Batch that is never
// acknowledged is delivered again after a restart or a rebalance.
func (b *Batch) Ack() {
	if b != nil && b.ack != nil {
		b.ack.Ack()
	}
}

// Acked reports whether Ack was called.
func (b *Batch) Acked() bool { return b != nil && b.ack != nil && b.ack.Acked() }

// CloseReason says why a partition handler is being closed.
type CloseReason int

const (
	// CloseRevoked: a rebalance moved the partition to another member.
	// Offsets acknowledged before Close returns are committed.
	CloseRevoked CloseReason = iota
	// CloseLost: the group session was lost (e.g. session timeout); another
	// member may already own the partition and commits will fail. Nothing
	// is committed.
	CloseLost
	// CloseShutdown: the consumer's Run is returning. Offsets acknowledged before Close
	// returns are committed.
	CloseShutdown
)

func (r CloseReason) String() string {
	switch r {
	case CloseRevoked:
		return "revoked"
	case CloseLost:
		return "lost"
	case CloseShutdown:
		return "shutdown"
	}
	return "CloseReason(" + strconv.Itoa(int(r)) + ")"
}

// PartitionHandler processes one assigned partition. See package ingest's
// documentation for the full contract.
type PartitionHandler interface {
	// Handle processes one batch. It is called on the partition's own
	// goroutine, one batch at a time, in offset order. It may keep the
	// batch and Ack it later from any goroutine. A non-nil error stops the
	// consumer: ingest.Consumer.Run closes every partition and returns an
	// *ingest.HandlerError. ctx is canceled when the partition is lost, or when a revoke or
	// shutdown outlasts ingest.Config.CloseTimeout.
	Handle(ctx context.Context, b *Batch) error
	// Close is called once, after the last Handle has returned, when the
	// partition is revoked, lost, or the consumer shuts down. It should
	// finish or abandon its work and Ack what is done before returning:
	// offsets are committed right after Close returns (except when lost),
	// and later Acks are ignored. ctx ends at ingest.Config.CloseTimeout.
	Close(ctx context.Context, reason CloseReason)
}

// Idler is implemented by a PartitionHandler that has periodic work to do
// on its partition's goroutine while no batch arrives — the engine uses it
// to checkpoint a partition whose input went quiet, so that what it
// produced last is flushed and its offsets committed without waiting for
// more input. Idle is called after ingest.Config.IdleInterval without a batch, then
// again after every further interval; an error stops the consumer like
// one from Handle.
type Idler interface {
	Idle(ctx context.Context) error
}

// Starter is implemented by a PartitionHandler that chooses where its
// partition starts, e.g. the engine restoring a snapshot. Start is called
// once per assignment, after the handler is created and before the first
// fetch, with the group's committed offset (-1 when the group has none). It
// returns the offset to start at, or -1 to keep the committed offset (or the
// reset policy when there is none). An error fails this group session; the
// client rejoins and calls Start again.
type Starter interface {
	Start(ctx context.Context, committed int64) (int64, error)
}
