package ingest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// chunk is the records of one partition from one poll.
type chunk struct {
	recs  []*kgo.Record
	bytes int64
}

// partition is the state of one assigned partition: the queue between the
// poll loop and the partition's goroutine, and the ack tracker that decides
// what may be committed.
type partition struct {
	c       *Consumer
	topic   string
	id      int32
	handler PartitionHandler
	// starter and idler are handler as a Starter and an Idler, nil when it
	// is not one: read once, when the partition is assigned.
	starter Starter
	idler   Idler
	decoder Decoder
	// headers is the scratch the records' headers are handed to the
	// decoder in, reused from record to record (partition goroutine only).
	headers []Header
	// rejects logs this partition's rejected records (build only).
	rejects rejectLog

	// ctx is the handler's context; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc

	// started is set once a Starter handler's Start has returned (at once
	// for other handlers): the goroutine calls Idle only after it, because
	// Start runs on the group's goroutine while run's idle timer may fire
	// before the first fetch (a data race on the handler's state otherwise).
	started atomic.Bool

	qmu      sync.Mutex
	queue    []chunk
	stopping bool
	wake     chan struct{} // cap 1: the queue grew
	stop     chan struct{} // closed when the partition closes
	done     chan struct{} // closed when the worker exits

	// tmu guards the tracker.
	tmu sync.Mutex
	// inflight are the batches handed out whose waits are not all released
	// or that follow one that is not, in offset order.
	inflight []*batchState
	// commit is the offset after the contiguous done prefix: what may be
	// committed. Offset -1 until the first batch is done.
	commit kgo.EpochOffset
	// committed is the last offset the group accepted from this member.
	committed int64
	// unacked counts records (and value bytes) dispatched and not yet done.
	unackedRecords, unackedBytes int64
	paused                       bool
	// gone is set when Close has returned: later acks are ignored.
	gone       bool
	dlqPending int
	dlqIdle    chan struct{} // cap 1: dlqPending dropped

	lag atomic.Int64
}

func newPartition(c *Consumer, topic string, id int32, h PartitionHandler) *partition {
	ctx, cancel := context.WithCancel(context.Background())
	p := &partition{
		c: c, topic: topic, id: id, handler: h, decoder: c.decoders[topic],
		ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		commit:    kgo.EpochOffset{Epoch: -1, Offset: -1},
		committed: -1,
		dlqIdle:   make(chan struct{}, 1),
		rejects:   rejectLog{every: c.cfg.RejectLogEvery},
	}
	p.starter, _ = h.(Starter)
	p.idler, _ = h.(Idler)
	if p.starter == nil {
		p.started.Store(true)
	}
	return p
}

// dispatch queues one poll's records for the partition's goroutine and
// pauses fetching when the unacked bound is reached. It never blocks (the
// poll loop calls it while rebalances wait).
func (p *partition) dispatch(recs []*kgo.Record, highWatermark int64) {
	var bytes int64
	for _, r := range recs {
		bytes += int64(len(r.Value))
	}
	p.tmu.Lock()
	p.unackedRecords += int64(len(recs))
	p.unackedBytes += bytes
	if !p.paused && p.overLocked() {
		p.paused = true
		p.c.cl.PauseFetchPartitions(map[string][]int32{p.topic: {p.id}})
		p.c.stats.pauses.Add(1)
	}
	p.tmu.Unlock()

	p.qmu.Lock()
	if p.stopping {
		p.qmu.Unlock()
		return
	}
	p.queue = append(p.queue, chunk{recs: recs, bytes: bytes})
	p.qmu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	p.lag.Store(max(highWatermark-(recs[len(recs)-1].Offset+1), 0))
}

func (p *partition) overLocked() bool {
	return p.unackedRecords >= int64(p.c.cfg.MaxUnackedRecords) || p.unackedBytes >= p.c.cfg.MaxUnackedBytes
}

// next returns the next queued chunk, waiting for one; ok is false once
// the partition is stopping.
// next waits for the next chunk. With idle > 0 it returns (chunk{}, true)
// with a zero chunk when none came for that long.
func (p *partition) next(idle time.Duration) (chunk, bool) {
	var timeout <-chan time.Time
	if idle > 0 {
		t := time.NewTimer(idle)
		defer t.Stop()
		timeout = t.C
	}
	for {
		p.qmu.Lock()
		if p.stopping {
			p.qmu.Unlock()
			return chunk{}, false
		}
		if len(p.queue) > 0 {
			ch := p.queue[0]
			p.queue[0] = chunk{}
			p.queue = p.queue[1:]
			p.qmu.Unlock()
			return ch, true
		}
		p.qmu.Unlock()
		select {
		case <-p.wake:
		case <-p.stop:
		case <-timeout:
			return chunk{}, true
		}
	}
}

func (p *partition) isStopping() bool {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	return p.stopping
}

// run is the partition's goroutine: decode, dead-letter, hand to Handle,
// one chunk at a time in offset order.
func (p *partition) run() {
	defer close(p.done)
	idler := p.idler
	var idle time.Duration
	if idler != nil {
		idle = p.c.cfg.IdleInterval
	}
	for {
		ch, ok := p.next(idle)
		if !ok {
			return
		}
		var err error
		if ch.recs == nil {
			if !p.started.Load() {
				continue // not started yet: nothing of the handler's is ours to touch
			}
			err = idler.Idle(p.ctx)
		} else {
			err = p.handler.Handle(p.ctx, p.build(ch))
		}
		if err != nil {
			if p.isStopping() || p.ctx.Err() != nil {
				return // the partition is closing: not a failure
			}
			p.c.fail(&HandlerError{Topic: p.topic, Partition: p.id, Err: err})
			return
		}
	}
}

// build decodes a chunk into a Batch, registers it with the tracker and
// starts its DLQ writes.
func (p *partition) build(ch chunk) *Batch {
	recs := ch.recs
	last := recs[len(recs)-1]
	b := &Batch{
		Topic: p.topic, Partition: p.id,
		FirstOffset: recs[0].Offset, NextOffset: last.Offset + 1,
		Records: make([]Record, 0, len(recs)),
	}
	var (
		dead                        []*dlqWrite
		spans, corrections, skipped int64
	)
	delivered := func(r *Record) {
		spans += int64(len(r.Spans))
		corrections += int64(len(r.Corrections))
		skipped += int64(r.Stats.SkippedNoModel)
		if len(r.Stats.Unkeyed) > 0 {
			p.c.noteUnkeyed(r, r.Stats.Unkeyed, time.Now())
		}
		if r.Stats.Dropped != (schemas.DroppedTimings{}) {
			p.c.dropped.note(p.c.log, r, r.Stats.Dropped)
		}
	}
	for _, r := range recs {
		// Decode in place: the slot is kept unless the record goes whole
		// to the DLQ (and a Record on the stack would escape through the
		// Decoder interface).
		b.Records = append(b.Records, Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Timestamp: r.Timestamp})
		rec := &b.Records[len(b.Records)-1]
		var err error
		p.headers, err = decodeSafe(p.decoder, r, p.headers, rec, p.c.cfg.Limits.MaxMessageBytes)
		err = checkFuture(rec, err, r.Timestamp, p.c.cfg.MaxFutureSkew)
		if err == nil {
			delivered(rec)
			continue
		}
		kind := classify(err)
		var pe *PartialError
		if errors.As(err, &pe) {
			delivered(rec)
			p.c.stats.invalidSpans.Add(int64(len(pe.Invalid)))
			p.c.stats.deadLetter(kind, true)
			p.c.noteReject(&p.rejects, r, kind, true, err, time.Now())
			dead = append(dead, p.c.dlqWriteFor(r, err, kind, pe))
			continue
		}
		b.Records[len(b.Records)-1] = Record{}
		b.Records = b.Records[:len(b.Records)-1]
		var panicErr *PanicError
		if errors.As(err, &panicErr) {
			p.c.stats.decoderPanics.Add(1)
			p.c.log.Error("ingest: decoder panicked; record dead-lettered as malformed",
				"topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
				"panic", panicErr.Value, "stack", string(panicErr.Stack))
		}
		p.c.stats.deadLetter(kind, false)
		p.c.noteReject(&p.rejects, r, kind, false, err, time.Now())
		b.DeadLettered++
		dead = append(dead, p.c.dlqWriteFor(r, err, kind, nil))
	}
	st := &batchState{
		p:       p,
		next:    kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1},
		records: int64(len(recs)),
		bytes:   ch.bytes,
		waits:   1 + len(dead),
	}
	b.SetAcker(st)
	p.tmu.Lock()
	p.inflight = append(p.inflight, st)
	p.dlqPending += len(dead)
	p.tmu.Unlock()
	// Counted once per batch: atomics per record would cost more than the
	// rest of the per-record path.
	p.c.stats.batch(p.topic, int64(len(recs)), spans, corrections, skipped)
	for _, d := range dead {
		p.c.writeDLQ(st, d)
	}
	return b
}

// release drops one wait of st; when the done prefix grows, the
// committable offset moves and fetching resumes if it was paused.
func (p *partition) release(st *batchState) {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	p.releaseLocked(st)
}

// dlqDone is release for a durable DLQ write.
func (p *partition) dlqDone(st *batchState) {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	p.dlqPending--
	select {
	case p.dlqIdle <- struct{}{}:
	default:
	}
	p.releaseLocked(st)
}

func (p *partition) releaseLocked(st *batchState) {
	if p.gone {
		return
	}
	st.waits--
	if st.waits > 0 {
		return
	}
	n := 0
	for n < len(p.inflight) && p.inflight[n].waits == 0 {
		s := p.inflight[n]
		p.commit = s.next
		p.unackedRecords -= s.records
		p.unackedBytes -= s.bytes
		p.inflight[n] = nil
		n++
	}
	p.inflight = p.inflight[n:]
	if p.paused && !p.overLocked() {
		p.paused = false
		p.c.cl.ResumeFetchPartitions(map[string][]int32{p.topic: {p.id}})
	}
}

// committable returns the offset to commit if it moved past the last
// commit.
func (p *partition) committable() (kgo.EpochOffset, bool) {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	return p.commit, !p.gone && p.commit.Offset > p.committed
}

func (p *partition) markCommitted(off int64) {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	if off > p.committed {
		p.committed = off
	}
}

// close stops the partition: no more dispatch, the in-flight Handle
// finishes (its context is canceled at once when lost, else when ctx
// ends), the handler's Close runs, pending DLQ writes are awaited (unless
// lost), and the tracker stops taking acks. It returns the offset to
// commit, if any.
func (p *partition) close(ctx context.Context, reason CloseReason) (kgo.EpochOffset, bool) {
	p.qmu.Lock()
	p.stopping = true
	p.queue = nil
	p.qmu.Unlock()
	close(p.stop)
	if reason == CloseLost {
		p.cancel()
	}
	stopCancel := context.AfterFunc(ctx, p.cancel)
	defer stopCancel()

	warn := time.NewTicker(5 * time.Second)
	defer warn.Stop()
	for waiting := true; waiting; {
		select {
		case <-p.done:
			waiting = false
		case <-warn.C:
			p.c.log.Warn("ingest: partition handler has not returned from Handle; the rebalance waits for it",
				"topic", p.topic, "partition", p.id, "reason", reason.String())
		}
	}
	p.handler.Close(ctx, reason)

	if reason != CloseLost {
		for {
			p.tmu.Lock()
			pending := p.dlqPending
			p.tmu.Unlock()
			if pending == 0 {
				break
			}
			select {
			case <-p.dlqIdle:
				continue
			case <-ctx.Done():
				p.c.log.Warn("ingest: DLQ writes still pending at close; their records will be redelivered",
					"topic", p.topic, "partition", p.id, "pending", pending)
			}
			break
		}
	}

	p.tmu.Lock()
	p.gone = true
	off, ok := p.commit, p.commit.Offset > p.committed && reason != CloseLost
	paused := p.paused
	p.paused = false
	p.tmu.Unlock()
	p.cancel()
	if paused {
		// Pausing is the client's, not the assignment's: a partition
		// assigned again must not start paused.
		p.c.cl.ResumeFetchPartitions(map[string][]int32{p.topic: {p.id}})
	}
	return off, ok
}
