// Package router is the engine's first stage. It consumes the source topics
// (OTLP spans, corrections) through package ingest, and re-keys every
// decoded record onto the keyed topic: each tenant's spans and corrections
// go to one partition (FNV-1a of the tenant modulo the partition count), so
// that one keyed-stage worker owns all of a tenant's state, corrections
// included.
//
// Every keyed record carries where it came from (headers, see
// schemas.HeaderSource) so the keyed stage can drop the duplicates a router
// writes when it restarts before committing, and the newest event time of
// its source partition so the keyed stage can compute a watermark that does
// not depend on how sources interleave. Keyed partitions that a source
// record sends nothing to get an empty heartbeat record now and then, and
// a source partition that stays silent for IdleTimeout gets an idle marker,
// so that the watermark neither stalls nor races.
//
// A batch is acknowledged (its source offsets become committable) only when
// every keyed record it produced is acknowledged by the broker. A produce
// that fails for good stops the router: records after it could otherwise
// land while it did not, and the keyed stage would take the gap for a
// duplicate.
package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrProduce wraps a keyed record that the broker refused for good.
var ErrProduce = errors.New("router: keyed produce failed")

// Router re-keys source records onto the keyed topic.
type Router struct {
	cfg Config
	cl  *kgo.Client
	// partitions is the keyed topic's partition count: refresh (Run's
	// goroutine) stores it, every source partition's handler loads it.
	partitions atomic.Int32
	topics     atomic.Pointer[string]
	failed     atomic.Pointer[error]

	mu       sync.Mutex
	handlers map[string]*handler
}

// New makes a router producing with cl, which must be idempotent (kgo's
// default) and should not be the ingest consumer's own client. It reads
// the partition counts of the keyed and source topics; the keyed topic must
// exist.
func New(ctx context.Context, cl *kgo.Client, cfg Config) (*Router, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := durableProducer(cl); err != nil {
		return nil, err
	}
	r := &Router{cfg: cfg, cl: cl, handlers: map[string]*handler{}}
	if err := r.refresh(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// ErrNotDurable is returned by New for a producer that could lose or
// double keyed records when a broker is lost: one that does not wait for
// every in-sync replica (acks=all) or is not idempotent. A record
// acknowledged by a leader alone is gone when that leader dies before its
// followers copied it (measured on a 3-broker cluster: a kill -9 of the
// leader with acks=1 changed 1,315 verdicts), and a retried write without
// idempotence may land twice.
var ErrNotDurable = errors.New("router: the keyed topic's producer must use acks=all and idempotence (kgo's defaults)")

// durableProducer refuses a client that is not acks=all and idempotent.
func durableProducer(cl *kgo.Client) error {
	if v, _ := cl.OptValue(kgo.DisableIdempotentWrite).(bool); v {
		return fmt.Errorf("%w: kgo.DisableIdempotentWrite is set", ErrNotDurable)
	}
	if a, ok := cl.OptValue(kgo.RequiredAcks).(kgo.Acks); ok && a != kgo.AllISRAcks() {
		return fmt.Errorf("%w: kgo.RequiredAcks is not kgo.AllISRAcks()", ErrNotDurable)
	}
	return nil
}

// refresh reads the partition counts.
func (r *Router) refresh(ctx context.Context) error {
	adm := kadm.NewClient(r.cl)
	names := append([]string{r.cfg.KeyedTopic}, r.cfg.SourceTopics...)
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("router: list topics: %w", err)
	}
	k, ok := td[r.cfg.KeyedTopic]
	if !ok || k.Err != nil || len(k.Partitions) == 0 {
		return fmt.Errorf("router: keyed topic %q missing", r.cfg.KeyedTopic)
	}
	r.partitions.Store(int32(len(k.Partitions)))
	srcs := slices.Clone(r.cfg.SourceTopics)
	slices.Sort(srcs)
	var b strings.Builder
	for i, t := range srcs {
		n := 0
		if d, ok := td[t]; ok && d.Err == nil {
			n = len(d.Partitions)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t + ":" + strconv.Itoa(n))
	}
	s := b.String()
	r.topics.Store(&s)
	return nil
}

// Run marks idle source partitions and refreshes topic metadata until ctx
// ends, and returns the first produce failure, which should stop the
// process.
func (r *Router) Run(ctx context.Context) error {
	tick := time.NewTicker(r.cfg.IdleTimeout / 4)
	defer tick.Stop()
	refresh := time.NewTicker(30 * time.Second)
	defer refresh.Stop()
	for {
		if e := r.failed.Load(); e != nil {
			return *e
		}
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.C:
			if err := r.refresh(ctx); err != nil {
				r.cfg.Logger.Warn("router: metadata refresh failed", "err", err)
			}
		case now := <-tick.C:
			r.markIdle(ctx, now)
		}
	}
}

// markIdle marks idle the source partitions that have been silent for
// IdleTimeout and have nothing left to read. Silence alone is not enough:
// a partition starved by the others while the router catches up a backlog
// is silent too, and marking it idle would let the other sources' event
// time make its records late.
func (r *Router) markIdle(ctx context.Context, now time.Time) {
	r.mu.Lock()
	var silent []*handler
	for _, h := range r.handlers {
		if h.silentSince(now) {
			silent = append(silent, h)
		}
	}
	r.mu.Unlock()
	if len(silent) == 0 {
		return
	}
	topics := map[string]bool{}
	for _, h := range silent {
		topics[h.topic] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	adm := kadm.NewClient(r.cl)
	qctx, cancel := context.WithTimeout(ctx, r.cfg.IdleTimeout)
	defer cancel()
	ends, err := adm.ListEndOffsets(qctx, names...)
	if err != nil {
		r.cfg.Logger.Debug("router: end offsets for idle check", "err", err)
		return
	}
	starts, err := adm.ListStartOffsets(qctx, names...)
	if err != nil {
		r.cfg.Logger.Debug("router: start offsets for idle check", "err", err)
		return
	}
	for _, h := range silent {
		end, ok := ends.Lookup(h.topic, h.partition)
		start, ok2 := starts.Lookup(h.topic, h.partition)
		if !ok || !ok2 || end.Err != nil || start.Err != nil {
			continue
		}
		h.markIdleIfCaughtUp(now, start.Offset, end.Offset)
	}
}

// Handler is the ingest.HandlerFactory of the router.
func (r *Router) Handler(topic string, partition int32) ingest.PartitionHandler {
	h := &handler{
		r: r, topic: topic, partition: partition, lastSeen: time.Now(), lastBatch: time.Now(), next: -1,
		split: NewSplitter(topic, partition, r.partitions.Load(), SplitterConfig{
			ByTenant: r.cfg.ByTenant, HeartbeatEvery: r.cfg.HeartbeatEvery, MaxRecordBytes: r.cfg.MaxRecordBytes,
			KeyedBatchVersion: r.cfg.KeyedBatchVersion,
		}),
	}
	r.mu.Lock()
	r.handlers[topic+"/"+strconv.Itoa(int(partition))] = h
	r.mu.Unlock()
	return h
}

func (r *Router) fail(err error) {
	err = fmt.Errorf("%w: %w", ErrProduce, err)
	r.failed.CompareAndSwap(nil, &err)
}

// handler routes one source partition.
type handler struct {
	r         *Router
	topic     string
	partition int32

	// mu orders the handler's produces with the idle ticker's.
	mu    sync.Mutex
	split *Splitter
	// lastSeen is when the last valid event (an LLM span or a correction
	// that passed decoding and validation) came: a source's progress is its
	// valid event time, so records that were all rejected (dead-lettered,
	// or spans without a model) do not keep it from going idle.
	lastSeen time.Time
	// lastBatch is when the last batch of any records came: a partition
	// read that recently is not starved by a backlog elsewhere.
	lastBatch time.Time
	// lastMarked is when idle markers were last written; they are
	// repeated every IdleTimeout while the source stays silent.
	lastMarked time.Time
	// next is the next source offset to route: the group's committed
	// offset at assignment (-1: none, reading from the log start), then
	// each batch's NextOffset.
	next int64
}

// Start remembers where the partition starts; the committed offset is kept.
func (h *handler) Start(_ context.Context, committed int64) (int64, error) {
	h.mu.Lock()
	h.next = committed
	h.mu.Unlock()
	return -1, nil
}

func (h *handler) Handle(ctx context.Context, b *ingest.Batch) error {
	if e := h.r.failed.Load(); e != nil {
		return *e
	}
	pending := &pendingBatch{b: b}
	pending.n.Add(1) // held until every record is handed to the producer
	h.mu.Lock()
	now := time.Now()
	h.lastBatch = now
	h.next = b.NextOffset
	h.split.SetPartitions(h.r.partitions.Load())
	for i := range b.Records {
		rec := &b.Records[i]
		if len(rec.Spans) > 0 || len(rec.Corrections) > 0 {
			h.lastSeen = now
		}
		for _, out := range h.split.Split(rec.Offset, rec.Spans, rec.Corrections) {
			h.produce(ctx, out, pending)
		}
	}
	h.mu.Unlock()
	pending.done(h.r)
	return nil
}

func (h *handler) produce(ctx context.Context, out Out, pending *pendingBatch) {
	rec := &kgo.Record{Topic: h.r.cfg.KeyedTopic, Partition: out.Partition, Value: out.Value,
		Headers: Headers(out, *h.r.topics.Load())}
	if d := h.r.cfg.Deployment; d != "" {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: schemas.HeaderDeployment, Value: []byte(d)})
	}
	if pending != nil {
		pending.n.Add(1)
	}
	h.r.cl.Produce(context.WithoutCancel(ctx), rec, func(_ *kgo.Record, err error) {
		if err != nil {
			h.r.fail(err)
			return
		}
		if pending != nil {
			pending.done(h.r)
		}
	})
}

// silentSince reports whether nothing came for IdleTimeout and the source
// is not marked idle yet. A handler busy routing a batch is not silent (and
// waiting for its lock here would hold back every other partition).
func (h *handler) silentSince(now time.Time) bool {
	if !h.mu.TryLock() {
		return false
	}
	defer h.mu.Unlock()
	return now.Sub(h.lastSeen) >= h.r.cfg.IdleTimeout && (!h.split.Idle() || now.Sub(h.lastMarked) >= h.r.cfg.IdleTimeout)
}

// markIdleIfCaughtUp writes the idle markers when the partition is still
// silent and everything in it up to end has been routed.
func (h *handler) markIdleIfCaughtUp(now time.Time, start, end int64) {
	if !h.mu.TryLock() {
		return
	}
	defer h.mu.Unlock()
	next := h.next
	if next < 0 {
		next = start
	}
	// Behind its end offset, a partition is idle only if it is being read
	// (batches came within the timeout, all without a valid event): one
	// that got no batch may be starved while the router catches up a
	// backlog on others, and its records would become late.
	if now.Sub(h.lastSeen) < h.r.cfg.IdleTimeout || (next < end && now.Sub(h.lastBatch) >= h.r.cfg.IdleTimeout) {
		return
	}
	if h.split.Idle() && now.Sub(h.lastMarked) < h.r.cfg.IdleTimeout {
		return
	}
	h.lastMarked = now
	// The markers carry how long the source has been silent: that is how
	// the wall clock reaches the keyed stage as data (its watermark of a
	// partition whose sources are all idle advances by it), so that a
	// replay of the keyed topic decides the same.
	for _, out := range h.split.IdleMarkersAt(now, h.lastSeen) {
		h.produce(context.Background(), out, nil)
	}
	h.r.cfg.Logger.Debug("router: source partition idle", "topic", h.topic, "partition", h.partition)
}

// Close waits until every keyed record produced so far is acknowledged, so
// that the batches they belong to are acked before ingest commits.
func (h *handler) Close(ctx context.Context, reason ingest.CloseReason) {
	h.r.mu.Lock()
	delete(h.r.handlers, h.topic+"/"+strconv.Itoa(int(h.partition)))
	h.r.mu.Unlock()
	if reason == ingest.CloseLost {
		return
	}
	if err := h.r.cl.Flush(ctx); err != nil {
		h.r.cfg.Logger.Warn("router: flush on close", "topic", h.topic, "partition", h.partition, "reason", reason, "err", err)
	}
}

// pendingBatch acks its batch once every produce it started succeeded.
type pendingBatch struct {
	b *ingest.Batch
	n atomic.Int64
}

func (p *pendingBatch) done(r *Router) {
	if p.n.Add(-1) == 0 && r.failed.Load() == nil {
		p.b.Ack()
	}
}

var _ ingest.Starter = (*handler)(nil)
