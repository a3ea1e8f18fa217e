package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-dev/fusebox/ingest/batch"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Sink is one destination of the engine's Output (sinks/kafkasink,
// sinks/clickhousesink and sinks/jsonlsink implement it; the delivery
// contract they share is in package sinks).
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

// StateStore keeps one checkpoint per keyed partition
// (engine/statestore implements it on a compacted topic).
type StateStore interface {
	Load(ctx context.Context, partition int32) (snap []byte, found bool, err error)
	Save(ctx context.Context, partition int32, snap []byte) error
}

// Signer signs fuse commands in place before they leave the engine
// (*fuse.Signer).
type Signer interface {
	SignAll(cmds []schemas.FuseCommand) error
}

// DurationObserver records one duration (*observe.Histogram implements
// it); it must be safe for concurrent use: every partition calls it.
type DurationObserver interface {
	ObserveDuration(d time.Duration)
}

// KeyedConfig configures the keyed stage.
type KeyedConfig struct {
	Worker WorkerConfig
	Store  StateStore
	Sinks  []Sink
	// Signer signs every fuse command; nil leaves them unsigned (only with
	// --insecure-unsigned).
	Signer Signer
	// CheckpointEvery is how often (wall time) a partition flushes the
	// sinks, saves its snapshot and acknowledges its input. Recovery
	// replays at most this much input. Default 10s.
	CheckpointEvery time.Duration
	Logger          *slog.Logger
	// CheckpointRecords also checkpoints a partition once this many keyed
	// records are unacknowledged, so that the consumer's bound on unacked
	// records (which pauses fetching) is never reached between
	// checkpoints. Default 100,000; keep it below the keyed consumer's
	// MaxUnackedRecords.
	CheckpointRecords int
	// WatermarkStallEvaluations: a partition whose watermark has not moved
	// for this many of its shortest evaluation intervals (wall time) while
	// records with data or progress keep arriving is logged and reported
	// by Stalled. Default 10.
	WatermarkStallEvaluations int
	// OnCheckpoint, when set, is called after each checkpoint with the
	// partition and the keyed offset it covers (tests). Keyed.Checkpoints
	// counts them.
	OnCheckpoint func(partition int32, nextOffset int64)
	// BatchLatency, when set, observes the wall time of every batch the
	// stage handles: from the moment ingest hands it over (right after its
	// fetch and decode) to the moment the worker has applied it and every
	// sink accepted its output (Write returned; a checkpoint in the same
	// call is included). nil: batches are not timed.
	BatchLatency DurationObserver
	// Deployment is this deployment's identity (its kafka.group). Keyed
	// records whose HeaderDeployment names another are skipped, counted
	// (ForeignRecords) and logged once per partition and deployment:
	// another deployment's router writes the same keyed topic. "" takes
	// every record.
	Deployment string
}

// Keyed is the engine's second stage: one Worker per assigned keyed
// partition, fed by ingest, writing to the sinks, checkpointing to the
// state store. Its Handler is the ingest.HandlerFactory for the keyed
// topic; the records' Payload is a *KeyedRecord (DecodeKeyedRecord).
type Keyed struct {
	cfg KeyedConfig

	mu sync.Mutex
	// stats holds, per owned partition, the worker's counters as of the
	// end of its last batch: the worker itself is only ever touched by
	// its partition's goroutine.
	stats map[int32]WorkerStats
	// retired sums the stats of workers whose partitions were revoked.
	retired WorkerStats
	// stalled holds, per owned partition whose watermark stalls, why.
	stalled map[int32]string
	// foreign counts keyed records of other deployments, skipped.
	foreign atomic.Int64
	// checkpoints counts the checkpoints of every partition.
	checkpoints atomic.Int64
	// reported holds the restore outcomes already logged.
	reported map[string]bool
	// starved holds, per owned partition, its starved half-open targets;
	// starvedSLOs the SLOs ever seen in it (see StarvedTargets).
	starved     map[int32][]processors.StarvedProbe
	starvedSLOs map[string]bool
}

// firstReport reports whether no partition restored with the same outcome
// before.
func (k *Keyed) firstReport(r RestoreReport) bool {
	key := fmt.Sprint(r.SLOs, r.Breaker, r.FormatVersion)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.reported == nil {
		k.reported = map[string]bool{}
	}
	if k.reported[key] {
		return false
	}
	k.reported[key] = true
	return true
}

// ForeignRecords is how many keyed records of other deployments this stage
// skipped.
func (k *Keyed) ForeignRecords() int64 { return k.foreign.Load() }

// Checkpoints is how many checkpoints (sinks flushed, state saved, input
// acknowledged) this stage's partitions made.
func (k *Keyed) Checkpoints() int64 { return k.checkpoints.Load() }

// NewKeyed fills cfg's zero fields with the defaults, checks it
// (KeyedConfig.Validate) and returns the stage.
func NewKeyed(cfg KeyedConfig) (*Keyed, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.WatermarkStallEvaluations <= 0 {
		cfg.WatermarkStallEvaluations = 10
	}
	return &Keyed{cfg: cfg, stats: map[int32]WorkerStats{}, stalled: map[int32]string{}, starved: map[int32][]processors.StarvedProbe{}}, nil
}

// Stats sums the counters of every worker this stage ran, as of the end of
// each one's last batch. Watermark is left 0: see Partitions.
func (k *Keyed) Stats() WorkerStats {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.retired
	s.Watermark = 0
	for _, ws := range k.stats {
		s.Add(ws)
	}
	return s
}

// Partitions returns the keyed partitions this process owns now and each
// one's watermark (Unix ns, math.MinInt64 before it is known).
func (k *Keyed) Partitions() map[int32]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[int32]int64, len(k.stats))
	for p, ws := range k.stats {
		out[p] = ws.Watermark
	}
	return out
}

// PartitionStats returns, per keyed partition this process owns now, the
// worker's counters as of the end of its last batch (Watermark included).
// Called from an OnCheckpoint callback, the checkpointed partition's entry
// holds what the snapshot just saved holds: no record is applied between
// the end of a batch and its checkpoint.
func (k *Keyed) PartitionStats() map[int32]WorkerStats {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[int32]WorkerStats, len(k.stats))
	for p, ws := range k.stats {
		out[p] = ws
	}
	return out
}

// publish records the worker's counters for Stats and Partitions.
func (p *keyedPartition) publish() {
	st := p.w.Stats()
	p.k.mu.Lock()
	p.k.stats[p.partition] = st
	p.k.mu.Unlock()
}

// Add adds s's counters to st (Watermark is left alone: a sum of
// watermarks means nothing; the caller combines them as it needs).
func (st *WorkerStats) Add(s WorkerStats) {
	st.Records += s.Records
	st.Duplicates += s.Duplicates
	st.Heartbeats += s.Heartbeats
	st.Spans += s.Spans
	st.LateSpans += s.LateSpans
	st.Corrections += s.Corrections
	st.LateCorrections += s.LateCorrections
	st.Evaluations += s.Evaluations
	st.Verdicts += s.Verdicts
	st.Commands += s.Commands
	st.SkippedEvaluations += s.SkippedEvaluations
	st.IdleNotLive += s.IdleNotLive
	for i := range st.Overflowed {
		st.Overflowed[i] += s.Overflowed[i]
	}
	st.KeysOverflowed += s.KeysOverflowed
	st.LiveKeys += s.LiveKeys
}

// Handler is the ingest.HandlerFactory of the keyed stage.
func (k *Keyed) Handler(topic string, partition int32) batch.PartitionHandler {
	return &keyedPartition{k: k, partition: partition}
}

// keyedPartition runs one Worker.
type keyedPartition struct {
	k         *Keyed
	partition int32
	w         *Worker
	pending   []*batch.Batch
	unacked   int // records in pending
	last      time.Time
	// wmLast is the watermark as of the last batch, wmMoved when it last
	// changed (wall time), stalled whether the stall is reported.
	wmLast   int64
	wmMoved  time.Time
	stalled  bool
	overflow [4]int64 // guard overflow counts already logged
	keysOver int64    // key-bound overflows already logged
	// foreign holds the other deployments already logged.
	foreign map[string]bool
	// starved holds the starved targets already logged (watchStarved).
	starved map[starvedID]processors.StarvedProbe
	// starvedSeen is the worker's evaluation and command counts at the
	// last watchStarved walk (valid when starvedWalked): starvation only
	// changes when an evaluation's verdicts reach the breaker or its
	// commands change a target, so a batch without either skips the walk
	// over every target.
	starvedSeen   [3]int64
	starvedWalked bool
}

// Start restores the partition's checkpoint and starts after it.
func (p *keyedPartition) Start(ctx context.Context, committed int64) (int64, error) {
	log := p.k.cfg.Logger.With("partition", p.partition)
	snap, found, err := p.k.cfg.Store.Load(ctx, p.partition)
	if err != nil {
		return 0, fmt.Errorf("engine: load checkpoint of partition %d: %w", p.partition, err)
	}
	if found {
		w, rep, err := RestoreWorker(p.k.cfg.Worker, p.partition, snap)
		if err != nil {
			return 0, err
		}
		p.setWorker(w)
		attrs := []any{"next_offset", w.NextOffset(), "bytes", len(snap), "format_version", rep.FormatVersion,
			"kept", rep.Names(Kept), "reset", rep.Names(Reset), "added", rep.Names(Added), "removed", rep.Names(Removed), "breaker", string(rep.Breaker)}
		// One line per distinct outcome at info/warn (every partition
		// of an edited file says the same), each partition at debug.
		log.Debug("restored checkpoint", attrs...)
		if p.k.firstReport(rep) {
			switch {
			case rep.Full():
				log.Info("restored checkpoint: state of every SLO and the breaker kept", attrs...)
			default:
				log.Warn("restored checkpoint under an edited SLO file: kept SLOs continue, reset and added ones start empty, removed ones are dropped", attrs...)
			}
		}
		p.last = time.Now()
		return w.NextOffset(), nil
	}
	w, err := NewWorker(p.k.cfg.Worker, p.partition)
	if err != nil {
		return 0, err
	}
	p.setWorker(w)
	if committed >= 0 {
		log.Warn("no checkpoint but a committed offset: state starts empty", "committed", committed)
	}
	p.last = time.Now()
	return -1, nil
}

func (p *keyedPartition) setWorker(w *Worker) {
	p.w = w
	p.starvedWalked = false
	p.overflow = w.guard.overflowed()
	p.keysOver = w.guard.keysOverflowed
	p.publish()
	p.watchStarved() // a restored half-open may be starved already
}

// Handle applies the batch, hands the output to the sinks, and checkpoints
// when CheckpointEvery has passed; KeyedConfig.BatchLatency times it.
func (p *keyedPartition) Handle(ctx context.Context, b *batch.Batch) error {
	o := p.k.cfg.BatchLatency
	if o == nil {
		return p.handle(ctx, b)
	}
	t0 := time.Now()
	err := p.handle(ctx, b)
	o.ObserveDuration(time.Since(t0))
	return err
}

func (p *keyedPartition) handle(ctx context.Context, b *batch.Batch) error {
	live := false
	for i := range b.Records {
		rec, ok := b.Records[i].Payload.(*KeyedRecord)
		if !ok {
			continue
		}
		if d := p.k.cfg.Deployment; d != "" && rec.Deployment != "" && rec.Deployment != d {
			p.skipForeign(rec)
			b.Records[i].Payload = nil
			continue
		}
		live = live || !rec.Idle
		refused := p.w.stats.IdleNotLive
		p.w.Apply(rec)
		if p.w.stats.IdleNotLive > refused {
			p.k.cfg.Logger.Debug("keyed: idle source not live, its silence does not advance the watermark (newest event time more than the live lag behind the clock: a backfill, a replay, or an export delay above allowed lateness + idle source timeout)",
				"partition", p.partition, "source_topic", rec.Source.Topic, "source_partition", rec.Source.Partition, "offset", rec.Offset)
		}
		// The batch is kept only to be acknowledged at the checkpoint:
		// let the spans go now.
		b.Records[i].Payload = nil
	}
	p.pending = append(p.pending, b)
	p.unacked += len(b.Records)
	p.watchWatermark(live, time.Now())
	p.publish()
	p.watchStarved()
	if err := p.write(ctx); err != nil {
		return p.soft(ctx, err)
	}
	p.logOverflow()
	if time.Since(p.last) >= p.k.cfg.CheckpointEvery || p.unacked >= p.k.cfg.CheckpointRecords {
		if err := p.checkpoint(ctx); err != nil {
			return p.soft(ctx, err)
		}
	}
	return nil
}

// skipForeign passes over a record of another deployment: it moves the
// worker's position only, so that neither its spans nor its source
// progress reach this deployment's state.
func (p *keyedPartition) skipForeign(rec *KeyedRecord) {
	p.w.Skip(rec.Offset)
	p.k.foreign.Add(1)
	if !p.foreign[rec.Deployment] {
		if p.foreign == nil {
			p.foreign = map[string]bool{}
		}
		p.foreign[rec.Deployment] = true
		p.k.cfg.Logger.Warn("keyed record of another deployment skipped: two deployments write one keyed topic (give each its own topics.keyed)",
			"partition", p.partition, "deployment", p.k.cfg.Deployment, "foreign_deployment", rec.Deployment, "offset", rec.Offset)
	}
}

// soft turns an error caused by the partition going away into nil: the
// unacknowledged batches are delivered to the partition's next owner.
func (p *keyedPartition) soft(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (p *keyedPartition) write(ctx context.Context) error {
	out := p.w.TakeOutput()
	if out.Empty() {
		return nil
	}
	if p.k.cfg.Signer != nil {
		if err := p.k.cfg.Signer.SignAll(out.Commands); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	for _, s := range p.k.cfg.Sinks {
		if err := s.Write(ctx, out); err != nil {
			return fmt.Errorf("engine: sink write: %w", err)
		}
	}
	return nil
}

// checkpoint makes everything so far durable, saves the snapshot, and
// acknowledges the input it covers.
func (p *keyedPartition) checkpoint(ctx context.Context) error {
	for _, s := range p.k.cfg.Sinks {
		if err := s.Flush(ctx); err != nil {
			return fmt.Errorf("engine: sink flush: %w", err)
		}
	}
	snap, err := p.w.MarshalBinary()
	if err != nil {
		return err
	}
	if err := p.k.cfg.Store.Save(ctx, p.partition, snap); err != nil {
		return err
	}
	for _, b := range p.pending {
		b.Ack()
	}
	clear(p.pending)
	p.pending = p.pending[:0]
	p.unacked = 0
	p.last = time.Now()
	p.k.checkpoints.Add(1)
	if p.k.cfg.OnCheckpoint != nil {
		p.k.cfg.OnCheckpoint(p.partition, p.w.NextOffset())
	}
	return nil
}

func (p *keyedPartition) logOverflow() {
	now := p.w.guard.overflowed()
	for i := range now {
		if now[i] > 0 && p.overflow[i] == 0 {
			p.k.cfg.Logger.Warn("cardinality limit reached: new values fold into the overflow key",
				"partition", p.partition, "dimension", schemas.Dimensions[i], "value", Overflow)
		}
	}
	p.overflow = now
	if k := p.w.guard.keysOverflowed; k > 0 && p.keysOver == 0 {
		p.k.cfg.Logger.Warn("live key limit reached: new keys fold into the overflow key, known keys keep their verdicts",
			"partition", p.partition, "max_keys", p.k.cfg.Worker.Guard.MaxKeys, "key", OverflowKey.String())
		p.keysOver = k
	} else if k > 0 {
		p.keysOver = k
	}
}

// watchWatermark reports a watermark that does not move while records
// (other than idle markers) keep arriving: WARN once and Stalled until it
// moves again, then INFO. Idle markers alone are no traffic: a pause of
// every publisher is not a stall.
func (p *keyedPartition) watchWatermark(live bool, now time.Time) {
	wm := p.w.Stats().Watermark
	if wm != p.wmLast || p.wmMoved.IsZero() {
		if p.stalled && wm != p.wmLast {
			p.k.cfg.Logger.Info("watermark moves again", "partition", p.partition,
				"watermark", time.Unix(0, wm).UTC(), "stalled_for", now.Sub(p.wmMoved).Round(time.Millisecond).String())
			p.stalled = false
			p.k.mu.Lock()
			delete(p.k.stalled, p.partition)
			p.k.mu.Unlock()
		}
		p.wmLast, p.wmMoved = wm, now
		return
	}
	after := time.Duration(p.k.cfg.WatermarkStallEvaluations) * p.w.MinInterval()
	if !live || p.stalled || now.Sub(p.wmMoved) < after {
		return
	}
	p.stalled = true
	at := "not known yet"
	if wm != math.MinInt64 {
		at = time.Unix(0, wm).UTC().Format(time.RFC3339Nano)
	}
	why := fmt.Sprintf("keyed partition %d: watermark (%s) has not moved for %v while records arrive (%d evaluation intervals of %v): a source partition holds it back",
		p.partition, at, now.Sub(p.wmMoved).Round(time.Second), p.k.cfg.WatermarkStallEvaluations, p.w.MinInterval())
	p.k.cfg.Logger.Warn("watermark stalled while records arrive: verdicts are held back",
		"partition", p.partition, "watermark", at, "for", now.Sub(p.wmMoved).Round(time.Second).String(),
		"evaluation_interval", p.w.MinInterval().String())
	p.k.mu.Lock()
	p.k.stalled[p.partition] = why
	p.k.mu.Unlock()
}

// Stalled returns, sorted by partition, why each owned keyed partition's
// watermark is reported stalled (see KeyedConfig.WatermarkStallEvaluations).
func (k *Keyed) Stalled() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	parts := make([]int32, 0, len(k.stalled))
	for p := range k.stalled {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, k.stalled[p])
	}
	return out
}

// Close checkpoints what was processed (unless the partition was lost).
func (p *keyedPartition) Close(ctx context.Context, reason batch.CloseReason) {
	if p.w == nil {
		return
	}
	p.k.mu.Lock()
	delete(p.k.stalled, p.partition)
	delete(p.k.starved, p.partition)
	if _, ok := p.k.stats[p.partition]; ok {
		delete(p.k.stats, p.partition)
		p.k.retired.Add(p.w.Stats())
	}
	p.k.mu.Unlock()
	if reason == batch.CloseLost {
		return
	}
	if err := p.checkpoint(ctx); err != nil {
		p.k.cfg.Logger.Warn("checkpoint on close failed: the next owner replays from the previous one",
			"partition", p.partition, "reason", reason, "err", err)
	}
}

// Idle checkpoints a partition whose input went quiet once CheckpointEvery
// has passed since its last checkpoint, so that its last output is flushed
// and its offsets committed without waiting for more input.
func (p *keyedPartition) Idle(ctx context.Context) error {
	if p.w == nil || len(p.pending) == 0 || time.Since(p.last) < p.k.cfg.CheckpointEvery {
		return nil
	}
	if err := p.checkpoint(ctx); err != nil {
		return p.soft(ctx, err)
	}
	return nil
}

var _ batch.Idler = (*keyedPartition)(nil)
