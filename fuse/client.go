package fuse

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// DefaultTopic is the fuse topic fusebox writes.
const DefaultTopic = "fusebox.fuse"

// Opt configures NewClient.
type Opt interface{ apply(*config) }

type opt func(*config)

func (f opt) apply(c *config) { f(c) }

type config struct {
	brokers  []string
	topic    string
	ring     *Keyring
	insecure bool
	clock    func() time.Time
	source   Source
	kgoOpts  []kgo.Opt
	logger   *slog.Logger
}

// WithBrokers sets the seed brokers of the default (franz-go) source.
func WithBrokers(addrs ...string) Opt { return opt(func(c *config) { c.brokers = addrs }) }

// WithTopic sets the topic of the default source. Default DefaultTopic.
func WithTopic(topic string) Opt { return opt(func(c *config) { c.topic = topic }) }

// WithKeyring sets the keys commands are verified with. Required unless
// WithInsecureUnsigned is given.
func WithKeyring(r *Keyring) Opt { return opt(func(c *config) { c.ring = r }) }

// WithInsecureUnsigned makes the client accept unsigned commands (for a
// fusebox run with --insecure-unsigned). Signed commands are still verified
// when a keyring is set, and rejected as unknown_key when none is.
func WithInsecureUnsigned() Opt { return opt(func(c *config) { c.insecure = true }) }

// WithClock sets the clock expiry and key not-after are judged against.
// Default time.Now: gateways run in wall time.
func WithClock(now func() time.Time) Opt { return opt(func(c *config) { c.clock = now }) }

// WithSource replaces the default franz-go source (e.g. with
// kafkago.NewSource); WithBrokers, WithTopic and WithKgoOpts are then
// ignored.
func WithSource(s Source) Opt { return opt(func(c *config) { c.source = s }) }

// WithKgoOpts adds franz-go options (TLS, SASL, client id) to the default
// source.
func WithKgoOpts(opts ...kgo.Opt) Opt {
	return opt(func(c *config) { c.kgoOpts = append(c.kgoOpts, opts...) })
}

// WithLogger sets where rejections and source errors are logged (never key
// material). Default: discarded.
func WithLogger(l *slog.Logger) Opt { return opt(func(c *config) { c.logger = l }) }

// Client follows the fuse topic and keeps, per target, the newest command
// that verified. Build it with NewClient, start it with Run, query it from
// any goroutine.
type Client struct {
	cfg config

	mu    sync.RWMutex
	state map[fuseschema.Key]fuseschema.FuseCommand
	// masks[m] counts the targets whose concrete (non-wildcard) dimensions
	// are the bits of m; Decide looks up only the masks present.
	masks    [16]int
	handlers []func(old, new fuseschema.FuseCommand)

	running atomic.Bool
	ready   chan struct{}
	// pending is the catch-up: partition → end offset still to reach. Only
	// the Run goroutine touches it.
	pending map[int32]int64

	records, applied, sourceErrors atomic.Uint64
	rejected                       [8]atomic.Uint64 // by rejectIndex
}

var rejectIndex = map[RejectReason]int{
	RejectMalformed: 0, RejectUnsigned: 1, RejectUnknownKey: 2, RejectKeyRetired: 3,
	RejectBadSignature: 4, RejectDuplicate: 5, RejectStale: 6, RejectExpired: 7,
}

// NewClient validates the options. It fails with ErrNoKeys when there is
// neither a keyring nor WithInsecureUnsigned, and when the default source
// has no brokers.
func NewClient(opts ...Opt) (*Client, error) {
	cfg := config{topic: DefaultTopic, clock: time.Now}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.ring == nil && !cfg.insecure {
		return nil, errors.Join(ErrNoKeys, errors.New("fuse: give WithKeyring, or WithInsecureUnsigned to accept unsigned commands"))
	}
	if cfg.clock == nil {
		return nil, errors.New("fuse: WithClock(nil)")
	}
	if cfg.source == nil {
		if len(cfg.brokers) == 0 {
			return nil, errors.New("fuse: no brokers (WithBrokers) and no source (WithSource)")
		}
		if cfg.topic == "" {
			return nil, errors.New("fuse: empty topic")
		}
		cfg.source = NewKgoSource(cfg.topic, append([]kgo.Opt{kgo.SeedBrokers(cfg.brokers...)}, cfg.kgoOpts...)...)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, state: map[fuseschema.Key]fuseschema.FuseCommand{}, ready: make(chan struct{})}, nil
}

// Run opens the source (retrying every 1s to 30s while it fails), reads the
// topic from the start to rebuild the state, marks the client ready when it
// has reached the end offsets seen at open, then follows the topic until
// ctx ends. It returns nil when ctx ends, ErrAlreadyRunning on a second
// call, or the source's ErrSourceClosed. It closes the source on return.
func (c *Client) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	src := c.cfg.source
	defer src.Close()
	backoff := time.Second
	for {
		pending, err := src.Open(ctx)
		if err == nil {
			c.pending = pending
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		c.sourceErrors.Add(1)
		c.cfg.logger.Warn("fuse: opening the source failed; retrying", "error", err, "retry_in", backoff)
		if !sleep(ctx, backoff) {
			return nil
		}
		backoff = min(2*backoff, 30*time.Second)
	}
	c.checkReady()
	for {
		recs, err := src.Poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrSourceClosed) {
			return err
		}
		if err != nil {
			c.sourceErrors.Add(1)
			c.cfg.logger.Warn("fuse: reading the fuse topic failed", "error", err)
			if !sleep(ctx, pollRetry) {
				return nil
			}
			continue
		}
		for i := range recs {
			c.handle(&recs[i])
		}
	}
}

// handle verifies and applies one record, then moves the catch-up.
func (c *Client) handle(r *Record) {
	defer func() {
		// Counted after the record's effects, so that Records reaching n
		// means the first n records are applied or rejected.
		if !r.Control {
			c.records.Add(1)
		}
		c.advance(r.Partition, r.Offset)
	}()
	if r.Control {
		return
	}
	if r.Value == nil {
		c.reject(RejectMalformed, nil, errors.New("tombstone (fusebox never writes one)"))
		return
	}
	cmd, err := fuseschema.DecodeFuseCommand(r.Value)
	if err != nil {
		c.reject(RejectMalformed, nil, err)
		return
	}
	now := c.cfg.clock()
	switch {
	case cmd.KeyID == "" && cmd.Signature == "" && c.cfg.insecure:
		// accepted unsigned
	case c.cfg.ring == nil:
		c.reject(RejectUnknownKey, &cmd, errors.New("signed command but no keyring"))
		return
	default:
		if err := c.cfg.ring.Verify(&cmd, now); err != nil {
			c.reject(reasonOf(err), &cmd, err)
			return
		}
	}
	c.mu.Lock()
	old, had := c.state[cmd.Target]
	// The ordering contract (doc.go, Ordering): (issued-at, version); the
	// held command stops counting once it has expired.
	heldCounts := had && now.UnixNano() < old.ExpiresAtUnixNano
	switch ord := fuseschema.CompareFuseOrder(&cmd, &old); {
	case had && ord == 0:
		c.mu.Unlock()
		c.reject(RejectDuplicate, &cmd, nil)
		return
	case now.UnixNano() >= cmd.ExpiresAtUnixNano:
		c.mu.Unlock()
		c.reject(RejectExpired, &cmd, nil)
		return
	case heldCounts && ord < 0:
		c.mu.Unlock()
		c.reject(RejectStale, &cmd, nil)
		return
	}
	c.state[cmd.Target] = cmd
	if !had {
		c.masks[maskOf(cmd.Target)]++
	}
	hs := c.handlers
	c.mu.Unlock()
	c.applied.Add(1)
	for _, h := range hs {
		h(old, cmd)
	}
}

func (c *Client) reject(reason RejectReason, cmd *fuseschema.FuseCommand, err error) {
	c.rejected[rejectIndex[reason]].Add(1)
	level := slog.LevelWarn
	if reason == RejectExpired || reason == RejectDuplicate {
		level = slog.LevelDebug // normal when catching up on an old topic
	}
	attrs := []any{"reason", string(reason)}
	if cmd != nil {
		attrs = append(attrs, "target", cmd.Target.String(), "version", cmd.Version, "key_id", cmd.KeyID)
	}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	c.cfg.logger.Log(context.Background(), level, "fuse: command rejected", attrs...)
}

func (c *Client) advance(p int32, off int64) {
	if end, ok := c.pending[p]; ok && off >= end-1 {
		delete(c.pending, p)
		c.checkReady()
	}
}

func (c *Client) checkReady() {
	if len(c.pending) == 0 {
		select {
		case <-c.ready:
		default:
			close(c.ready)
		}
	}
}

// Ready reports whether the initial catch-up is done: the client has read
// every partition up to the end offsets it saw when it opened the topic.
func (c *Client) Ready() bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// WaitReady blocks until Ready or ctx ends (then it returns ctx's error).
func (c *Client) WaitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnChange registers fn, called after each applied command with the
// previous command of the same target (zero when none) and the new one. It
// runs on the Run goroutine, in topic order, during the catch-up too; it
// must not block for long. Expiry does not call it (Decide and State
// consult the clock).
func (c *Client) OnChange(fn func(old, new fuseschema.FuseCommand)) {
	c.mu.Lock()
	c.handlers = append(slices.Clip(c.handlers), fn)
	c.mu.Unlock()
}

// State returns the newest applied command of exactly this target, and
// false when there is none or it has expired.
func (c *Client) State(target fuseschema.Key) (fuseschema.FuseCommand, bool) {
	now := c.cfg.clock().UnixNano()
	c.mu.RLock()
	cmd, ok := c.state[target]
	c.mu.RUnlock()
	if !ok || now >= cmd.ExpiresAtUnixNano {
		return fuseschema.FuseCommand{}, false
	}
	return cmd, true
}

// Snapshot returns the unexpired commands of every target, sorted by
// target.
func (c *Client) Snapshot() []fuseschema.FuseCommand {
	now := c.cfg.clock().UnixNano()
	c.mu.RLock()
	out := make([]fuseschema.FuseCommand, 0, len(c.state))
	for _, cmd := range c.state {
		if now < cmd.ExpiresAtUnixNano {
			out = append(out, cmd)
		}
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b fuseschema.FuseCommand) int { return strings.Compare(a.Target.String(), b.Target.String()) })
	return out
}

// Stats counts what the client read.
type Stats struct {
	Records      uint64 // data records handled (control records excluded)
	Applied      uint64 // commands applied
	Rejected     map[RejectReason]uint64
	SourceErrors uint64 // failed opens and polls
	Targets      int    // targets with an applied command (expired included)
	Ready        bool
}

// Stats returns the counters; Rejected has an entry for every reason.
func (c *Client) Stats() Stats {
	s := Stats{
		Records: c.records.Load(), Applied: c.applied.Load(), SourceErrors: c.sourceErrors.Load(),
		Rejected: make(map[RejectReason]uint64, len(rejectIndex)), Ready: c.Ready(),
	}
	for r, i := range maps.All(rejectIndex) {
		s.Rejected[r] = c.rejected[i].Load()
	}
	c.mu.RLock()
	s.Targets = len(c.state)
	c.mu.RUnlock()
	return s
}
