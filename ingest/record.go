package ingest

import (
	"strconv"
	"sync/atomic"

	"github.com/fusebox-dev/fusebox/ingest/batch"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The records, batches and handler contract of package batch, under
// ingest's names: the consumer's API is the same whether a caller imports
// ingest or (like the engine, which must not depend on the Kafka client)
// ingest/batch alone.
type (
	Record           = batch.Record
	Header           = batch.Header
	Decoder          = batch.Decoder
	DecoderFunc      = batch.DecoderFunc
	InvalidSpan      = batch.InvalidSpan
	PartialError     = batch.PartialError
	Batch            = batch.Batch
	CloseReason      = batch.CloseReason
	PartitionHandler = batch.PartitionHandler
	Idler            = batch.Idler
	Starter          = batch.Starter
)

// The close reasons (see batch.CloseReason).
const (
	CloseRevoked  = batch.CloseRevoked
	CloseLost     = batch.CloseLost
	CloseShutdown = batch.CloseShutdown
)

// Headers appends the headers of a Kafka record to dst[:0] as Headers.
func Headers(dst []Header, hs []kgo.RecordHeader) []Header {
	dst = dst[:0]
	for _, h := range hs {
		dst = append(dst, Header(h))
	}
	return dst
}

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

// Ack implements batch.Acker: the first call releases the batch.
func (st *batchState) Ack() {
	if st.acked.CompareAndSwap(false, true) {
		st.p.release(st)
	}
}

// Acked implements batch.Acker.
func (st *batchState) Acked() bool { return st.acked.Load() }

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
