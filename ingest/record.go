package ingest

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is one Kafka record, decoded once. Which fields are filled depends
// on the topic's decoder: the span decoder fills Spans and Stats, the
// correction decoder Corrections, a custom Decoder whatever it likes
// (Payload is for its own type).
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Timestamp time.Time

	// Spans are the message's LLM spans that passed Span.Validate, in
	// message order. Empty when the message held no LLM span: such a record
	// still flows, so that its offset is acknowledged like any other.
	Spans []schemas.Span
	// Corrections holds the one correction event of a correction record.
	Corrections []schemas.Correction
	// Stats counts every span the message held, LLM call or not.
	Stats schemas.DecodeStats
	// Payload is free for a custom Decoder.
	Payload any
}

// Header is one Kafka record header. It is schemas.Header, so that the
// keyed stage's decoder (engine.KeyedDecoder) reads the headers the
// consumer hands it without a copy and without the Kafka client's types.
type Header = schemas.Header

// Decoder turns a Kafka record — its offset, headers and value — into a
// Record. The consumer fills out's Topic, Partition, Offset, Key and
// Timestamp before calling Decode, and has already checked the value
// against Limits.MaxMessageBytes.
//
// A nil error delivers out to the handler. A *PartialError delivers out and
// also writes the record to the DLQ marked partial. Any other error sends
// the record to the DLQ and does not deliver it; the error's kind (see
// ErrorKind) comes from the schemas sentinel it wraps (ErrTooLarge,
// ErrMalformed, ErrInvalid; anything else counts as malformed) and its
// field from a wrapped *schemas.FieldError. A panic is recovered and treated
// as a malformed record.
//
// The headers slice is the consumer's and is reused once Decode returns
// (the header values and value themselves stay valid: out may keep them).
//
// Decode is called on the partition's goroutine; one Decoder serves every
// partition of its topic, so it must be safe for concurrent use.
type Decoder interface {
	Decode(offset int64, headers []Header, value []byte, out *Record) error
}

// DecoderFunc adapts a function to Decoder.
type DecoderFunc func(offset int64, headers []Header, value []byte, out *Record) error

// Decode calls f.
func (f DecoderFunc) Decode(offset int64, headers []Header, value []byte, out *Record) error {
	return f(offset, headers, value, out)
}

// Headers appends the headers of a Kafka record to dst[:0] as Headers.
func Headers(dst []Header, hs []kgo.RecordHeader) []Header {
	dst = dst[:0]
	for _, h := range hs {
		dst = append(dst, Header(h))
	}
	return dst
}

// InvalidSpan is one span of a message that failed Span.Validate.
type InvalidSpan struct {
	// Index is the span's position among the message's LLM spans (those
	// carrying a model), in message order: decoding the DLQ record again
	// yields the same order.
	Index int
	Err   error
}

// PartialError is returned by a Decoder when a record decoded but some of
// its spans are invalid: the valid spans are delivered, and the record goes
// to the DLQ unchanged, with fusebox.dlq.partial=true and one
// fusebox.dlq.invalid_span header per invalid span.
type PartialError struct {
	Invalid []InvalidSpan
	// Total is the number of LLM spans the message held.
	Total int
	// Evaluations is why the message's gen_ai.evaluation.result events
	// (some or all) made no correction, nil when they all did: the spans
	// and the other corrections are delivered, the record is dead-lettered
	// as partial.
	Evaluations error
}

func (e *PartialError) Error() string {
	if len(e.Invalid) == 0 && e.Evaluations != nil {
		return "evaluation events: " + e.Evaluations.Error()
	}
	msg := strconv.Itoa(len(e.Invalid)) + " of " + strconv.Itoa(e.Total) + " spans invalid"
	if len(e.Invalid) > 0 {
		msg += "; first: span " + strconv.Itoa(e.Invalid[0].Index) + ": " + e.Invalid[0].Err.Error()
	}
	if e.Evaluations != nil {
		msg += "; evaluation events: " + e.Evaluations.Error()
	}
	return msg
}

// Unwrap returns the span errors, so that errors.Is(err, schemas.ErrInvalid)
// holds.
func (e *PartialError) Unwrap() []error {
	out := make([]error, len(e.Invalid), len(e.Invalid)+1)
	for i, s := range e.Invalid {
		out[i] = s.Err
	}
	if e.Evaluations != nil {
		out = append(out, e.Evaluations)
	}
	return out
}

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

	st *batchState
}

// Ack marks the batch done. The partition's committed offset moves to the
// batch's NextOffset once this and every earlier batch of the partition are
// acknowledged and their DLQ writes are durable. Ack is idempotent, may be
// called from any goroutine and in any order across batches, and is ignored
// after the partition's Close has returned. A Batch that is never
// acknowledged is delivered again after a restart or a rebalance.
func (b *Batch) Ack() {
	if b == nil || b.st == nil {
		return
	}
	if b.st.acked.CompareAndSwap(false, true) {
		b.st.p.release(b.st)
	}
}

// Acked reports whether Ack was called.
func (b *Batch) Acked() bool { return b != nil && b.st != nil && b.st.acked.Load() }

// batchState is the commit bookkeeping of one batch.
type batchState struct {
	p *partition
	// next is what the group commits once the batch is done.
	next kgo.EpochOffset
	// records and bytes are released from the partition's unacked count
	// once the batch leaves the tracker.
	records int64
	bytes   int64
	// waits counts what the batch still waits for: the handler's ack, and
	// one per DLQ write. Guarded by partition.tmu.
	waits int
	acked atomic.Bool
}

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
	// CloseShutdown: Run is returning. Offsets acknowledged before Close
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

// PartitionHandler processes one assigned partition. See the package
// documentation for the full contract.
type PartitionHandler interface {
	// Handle processes one batch. It is called on the partition's own
	// goroutine, one batch at a time, in offset order. It may keep the
	// batch and Ack it later from any goroutine. A non-nil error stops the
	// consumer: Run closes every partition and returns a *HandlerError.
	// ctx is canceled when the partition is lost, or when a revoke or
	// shutdown outlasts CloseTimeout.
	Handle(ctx context.Context, b *Batch) error
	// Close is called once, after the last Handle has returned, when the
	// partition is revoked, lost, or the consumer shuts down. It should
	// finish or abandon its work and Ack what is done before returning:
	// offsets are committed right after Close returns (except when lost),
	// and later Acks are ignored. ctx ends at CloseTimeout.
	Close(ctx context.Context, reason CloseReason)
}

// Idler is implemented by a PartitionHandler that has periodic work to do
// on its partition's goroutine while no batch arrives — the engine uses it
// to checkpoint a partition whose input went quiet, so that what it
// produced last is flushed and its offsets committed without waiting for
// more input. Idle is called after IdleInterval without a batch, then
// again after every further IdleInterval; an error stops the consumer like
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

// HandlerError is what Run returns when a PartitionHandler's Handle fails.
type HandlerError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e *HandlerError) Error() string {
	return "ingest: handler of " + e.Topic + "[" + strconv.Itoa(int(e.Partition)) + "]: " + e.Err.Error()
}

// Unwrap returns the handler's error.
func (e *HandlerError) Unwrap() error { return e.Err }
