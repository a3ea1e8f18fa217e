package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrRunTwice is returned by a second call of Run: a Consumer is used once.
var ErrRunTwice = errors.New("ingest: Run called twice; create a new Consumer")

// commitTimeout bounds one offset commit request.
const commitTimeout = 10 * time.Second

type tp struct {
	topic     string
	partition int32
}

// Consumer is a Kafka consumer group member over the span, correction and
// custom topics. Create it with New and start it with Run.
type Consumer struct {
	cfg      Config
	log      *slog.Logger
	topics   []string
	decoders map[string]Decoder
	stats    *counters
	unkeyed  unkeyedLog
	dropped  droppedLog

	started atomic.Bool
	cl      *kgo.Client
	dlqCtx  context.Context

	mu      sync.Mutex // guards parts and closing
	parts   map[tp]*partition
	closing bool

	// commitMu serializes commits with revocations, so that no commit of a
	// partition is issued after it was revoked.
	commitMu sync.Mutex

	failMu  sync.Mutex
	failErr error
	stopRun context.CancelFunc
}

// New applies the options to DefaultConfig and returns NewFromConfig's
// Consumer. The returned error wraps ErrConfig and names each bad option.
func New(opts ...Opt) (*Consumer, error) {
	cfg := DefaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	return NewFromConfig(cfg)
}

// NewFromConfig validates cfg (start from DefaultConfig) and returns a
// Consumer. It does not connect: Run does.
func NewFromConfig(cfg Config) (*Consumer, error) {
	if cfg.Decoders == nil {
		cfg.Decoders = map[string]Decoder{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:      cfg,
		log:      cfg.Logger,
		topics:   cfg.topics(),
		decoders: map[string]Decoder{},
		parts:    map[tp]*partition{},
		unkeyed:  unkeyedLog{every: cfg.RejectLogEvery},
	}
	for _, t := range c.topics {
		c.decoders[t] = cfg.decoderFor(t)
	}
	c.stats = newCounters(c.topics)
	return c, nil
}

// Topics returns the topics the consumer subscribes to.
func (c *Consumer) Topics() []string { return append([]string(nil), c.topics...) }

// Run joins the group and consumes until ctx ends or a handler fails. Then
// it stops fetching, closes every partition handler (CloseShutdown), waits
// for pending DLQ writes, commits the acknowledged offsets synchronously and
// leaves the group. It returns nil after a shutdown asked for through ctx,
// a *HandlerError when a handler failed, or the client's construction
// error. Run may be called once.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	c.stopRun = stop
	dlqCtx, dlqCancel := context.WithCancel(context.Background())
	defer dlqCancel()
	c.dlqCtx = dlqCtx

	cl, err := kgo.NewClient(c.clientOpts()...)
	if err != nil {
		return fmt.Errorf("ingest: create client: %w", err)
	}
	c.cl = cl

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.commitLoop(runCtx)
	}()

	c.pollLoop(runCtx, cl)

	stop()
	wg.Wait()
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	// Leaving the group calls onRevoked for everything we own: handlers
	// are closed with CloseShutdown and the acked offsets committed while
	// the client can still talk to the group.
	cl.CloseAllowingRebalance()
	// Anything still here was never revoked (the group session had ended):
	// close it without a commit, which could not succeed any more.
	c.closeRemaining()
	dlqCancel()

	c.failMu.Lock()
	defer c.failMu.Unlock()
	return c.failErr
}

func (c *Consumer) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.ConsumerGroup(c.cfg.Group),
		kgo.ConsumeTopics(c.topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
		kgo.AdjustFetchOffsetsFn(c.adjustOffsets),
		kgo.ProducerBatchMaxBytes(DLQMaxBatchBytes),
		kgo.WithLogger(&kgoLogger{l: c.log}),
	}
	return append(opts, c.cfg.ClientOpts...)
}

// pollLoop fetches and dispatches until ctx ends. Rebalance callbacks run
// only between polls (BlockRebalanceOnPoll), so a poll's records always go
// to the partition states current when they were fetched.
func (c *Consumer) pollLoop(ctx context.Context, cl *kgo.Client) {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			c.stats.fetchError.Add(1)
			c.log.Error("ingest: fetch error", "topic", topic, "partition", partition, "err", err)
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			c.mu.Lock()
			part := c.parts[tp{p.Topic, p.Partition}]
			c.mu.Unlock()
			if part == nil {
				c.log.Warn("ingest: records for a partition not assigned here; dropped (they stay uncommitted)",
					"topic", p.Topic, "partition", p.Partition, "records", len(p.Records))
				return
			}
			part.dispatch(p.Records, p.HighWatermark)
		})
		cl.AllowRebalance()
	}
}

// fail records the first handler failure and stops Run.
func (c *Consumer) fail(err error) {
	c.failMu.Lock()
	first := c.failErr == nil
	if first {
		c.failErr = err
	}
	c.failMu.Unlock()
	if first {
		c.log.Error("ingest: handler failed; stopping", "err", err)
		c.stopRun()
	}
}

func (c *Consumer) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return
	}
	for topic, ps := range assigned {
		for _, id := range ps {
			h := c.cfg.Handlers(topic, id)
			if h == nil {
				c.fail(&HandlerError{Topic: topic, Partition: id, Err: errors.New("HandlerFactory returned nil")})
				continue
			}
			p := newPartition(c, topic, id, h)
			c.mu.Lock()
			old := c.parts[tp{topic, id}]
			c.parts[tp{topic, id}] = p
			c.mu.Unlock()
			if old != nil {
				// The client never assigns what we own; if it did,
				// the old state must not leak.
				c.log.Warn("ingest: partition assigned twice; closing the old handler", "topic", topic, "partition", id)
				ctx, cancel := contextAfter(c.cfg.CloseTimeout)
				old.close(ctx, CloseLost)
				cancel()
			}
			go p.run()
		}
	}
	c.log.Info("ingest: partitions assigned", "assigned", assigned)
}

func (c *Consumer) adjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	for topic, m := range offsets {
		for id, off := range m {
			c.mu.Lock()
			p := c.parts[tp{topic, id}]
			c.mu.Unlock()
			if p == nil {
				continue
			}
			s := p.starter
			if s == nil {
				continue
			}
			committed := off.EpochOffset().Offset
			if committed < 0 {
				committed = -1
			}
			start, err := s.Start(ctx, committed)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, context.Canceled) {
					// A shutdown (or a revoke) cut the start short: nothing is
					// wrong, and the partition is started again by whoever
					// owns it next.
					c.log.Debug("ingest: handler Start canceled", "topic", topic, "partition", id, "err", err)
					return nil, fmt.Errorf("ingest: start %s[%d]: %w", topic, id, err)
				}
				c.log.Error("ingest: handler Start failed; the group session restarts", "topic", topic, "partition", id, "err", err)
				return nil, fmt.Errorf("ingest: start %s[%d]: %w", topic, id, err)
			}
			p.started.Store(true)
			if start >= 0 {
				m[id] = kgo.NewOffset().At(start)
			}
		}
	}
	return offsets, nil
}

func (c *Consumer) onRevoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	c.mu.Lock()
	reason := CloseRevoked
	if c.closing {
		reason = CloseShutdown
	}
	c.mu.Unlock()
	c.closePartitions(revoked, reason)
}

func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.closePartitions(lost, CloseLost)
}

// closePartitions closes the given partitions in parallel and, unless they
// were lost, commits what their handlers acknowledged. It returns only
// after the commit, so that the rebalance hands the partitions over with
// their final offsets.
func (c *Consumer) closePartitions(m map[string][]int32, reason CloseReason) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	var parts []*partition
	c.mu.Lock()
	for topic, ids := range m {
		for _, id := range ids {
			if p := c.parts[tp{topic, id}]; p != nil {
				parts = append(parts, p)
				delete(c.parts, tp{topic, id})
			}
		}
	}
	c.mu.Unlock()
	if len(parts) == 0 {
		return
	}
	ctx, cancel := contextAfter(c.cfg.CloseTimeout)
	defer cancel()
	offs := make([]kgo.EpochOffset, len(parts))
	oks := make([]bool, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offs[i], oks[i] = p.close(ctx, reason)
		}()
	}
	wg.Wait()
	if reason == CloseLost {
		c.log.Warn("ingest: partitions lost; nothing committed", "partitions", m)
		return
	}
	var commit []*partition
	var at []kgo.EpochOffset
	for i, p := range parts {
		if oks[i] {
			commit = append(commit, p)
			at = append(at, offs[i])
		}
	}
	cctx, ccancel := context.WithTimeout(context.Background(), commitTimeout)
	defer ccancel()
	c.commit(cctx, commit, at)
	c.log.Info("ingest: partitions closed", "reason", reason.String(), "partitions", m)
}

// closeRemaining closes partitions no revoke reached, without a commit.
func (c *Consumer) closeRemaining() {
	c.mu.Lock()
	m := map[string][]int32{}
	for k := range c.parts {
		m[k.topic] = append(m[k.topic], k.partition)
	}
	c.mu.Unlock()
	if len(m) > 0 {
		c.closePartitions(m, CloseLost)
	}
}

// commitLoop commits acknowledged offsets every CommitInterval.
func (c *Consumer) commitLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.commitAcked()
		}
	}
}

// commitAcked commits every owned partition whose acknowledged prefix moved.
func (c *Consumer) commitAcked() {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	var parts []*partition
	var at []kgo.EpochOffset
	c.mu.Lock()
	for _, p := range c.parts {
		if off, ok := p.committable(); ok {
			parts = append(parts, p)
			at = append(at, off)
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	c.commit(ctx, parts, at)
}

// commit commits at[i] for parts[i] synchronously and records, per
// partition, what the group accepted. Failures are logged and counted: the
// next periodic commit (or the next owner) tries again; at worst records
// are redelivered.
func (c *Consumer) commit(ctx context.Context, parts []*partition, at []kgo.EpochOffset) {
	if len(parts) == 0 {
		return
	}
	req := make(map[string]map[int32]kgo.EpochOffset)
	for i, p := range parts {
		if req[p.topic] == nil {
			req[p.topic] = map[int32]kgo.EpochOffset{}
		}
		req[p.topic][p.id] = at[i]
	}
	c.stats.commits.Add(1)
	c.cl.CommitOffsetsSync(ctx, req, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			c.stats.commitErrors.Add(1)
			c.log.Error("ingest: offset commit failed", "err", err)
			return
		}
		ok := map[tp]bool{}
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil {
					c.stats.commitErrors.Add(1)
					c.log.Error("ingest: offset commit failed", "topic", t.Topic, "partition", rp.Partition, "err", perr)
					continue
				}
				ok[tp{t.Topic, rp.Partition}] = true
			}
		}
		for i, p := range parts {
			if ok[tp{p.topic, p.id}] {
				p.markCommitted(at[i].Offset)
			}
		}
	})
}

// kgoLogger forwards franz-go's log lines to slog. franz-go's INFO lines
// (dozens at start: metadata, joins, assignments) are client chatter and
// go out at debug; its warnings and errors keep their level.
type kgoLogger struct{ l *slog.Logger }

func (k *kgoLogger) Level() kgo.LogLevel {
	if k.l.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}

func (k *kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var lv slog.Level
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	default: // info and debug: chatter
		lv = slog.LevelDebug
	}
	k.l.Log(context.Background(), lv, "kgo: "+msg, keyvals...)
}

// contextAfter returns a context whose deadline is d from now, for the
// revoke path, whose callbacks get the client's long-lived context.
func contextAfter(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
