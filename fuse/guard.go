package fuse

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// Verifier checks a command's signature at a time (Keyring.Verify, or
// Signer.Verify for fusebox's own keys).
type Verifier interface {
	Verify(c *fuseschema.FuseCommand, now time.Time) error
}

// Publisher writes one record to the fuse topic with the given key and
// value, as fusebox's fuse sink does (same topic, same partitioner), and
// returns once the broker acknowledged it.
type Publisher func(ctx context.Context, key, value []byte) error

// Guard is fusebox following its own fuse topic. The topic is compacted:
// whoever can write to it can erase a target's command with a tombstone,
// or re-publish an older (still unexpired) trip after a newer close, and
// compaction would then keep the wrong record for every gateway that
// starts later. The Guard keeps, per record key, the current command —
// the latest in the ordering contract (fuseschema.CompareFuseOrder) among the
// records that decode and verify with fusebox's keys — and whenever the
// latest record of a key is anything else (a tombstone, garbage, an
// unsigned or forged command, an older command), it re-publishes the
// current command's exact bytes (same version and signature: gateways that
// hold it see a duplicate; compaction keeps it). During the catch-up it
// waits for the end of the topic, then repairs every key at once; while
// following, within one poll (milliseconds).
//
// It cannot restore a target it never saw a valid command for, and with
// --insecure-unsigned anyone's command verifies: the broker's ACLs (only
// fusebox's principal writes the fuse topic) are the first line, the
// Guard the second.
type Guard struct {
	src     Source
	verify  Verifier
	publish Publisher
	clock   func() time.Time
	logger  *slog.Logger

	mu      sync.Mutex
	current map[string]guarded
	pending map[int32]int64
	ready   bool

	records, foreign, republished, publishErrs atomic.Uint64
}

type guarded struct {
	cmd    fuseschema.FuseCommand
	value  []byte
	lastOK bool // the key's latest record is this command
}

// GuardStats counts what the Guard saw and did.
type GuardStats struct {
	Records     uint64 // data records read
	Foreign     uint64 // records that were not the current command of their key (tombstones, garbage, unverified, older)
	Republished uint64 // current commands written again
	PublishErrs uint64 // failed re-publishes (retried on the next poll)
	Targets     int    // keys with a current command
}

// NewGuard returns a Guard reading src, trusting commands that v
// verifies, repairing with pub. clock judges key not-after (nil:
// time.Now); logger may be nil.
func NewGuard(src Source, v Verifier, pub Publisher, clock func() time.Time, logger *slog.Logger) (*Guard, error) {
	if src == nil || v == nil || pub == nil {
		return nil, errors.New("fuse: NewGuard needs a source, a verifier and a publisher")
	}
	if clock == nil {
		clock = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{src: src, verify: v, publish: pub, clock: clock, logger: logger, current: map[string]guarded{}}, nil
}

// Stats returns the counters.
func (g *Guard) Stats() GuardStats {
	g.mu.Lock()
	n := len(g.current)
	g.mu.Unlock()
	return GuardStats{Records: g.records.Load(), Foreign: g.foreign.Load(), Republished: g.republished.Load(),
		PublishErrs: g.publishErrs.Load(), Targets: n}
}

// Ready reports whether the Guard has read the topic up to the end
// offsets seen when it opened it.
func (g *Guard) Ready() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ready
}

// Run follows the topic until ctx ends (nil) or the source is closed
// (ErrSourceClosed). Source errors are logged and retried.
func (g *Guard) Run(ctx context.Context) error {
	defer g.src.Close()
	backoff := time.Second
	for {
		p, err := g.src.Open(ctx)
		if err == nil {
			g.mu.Lock()
			g.pending = p
			g.ready = len(p) == 0
			g.mu.Unlock()
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		g.logger.Warn("fuse guard: opening the fuse topic failed; retrying", "error", err, "retry_in", backoff)
		if !sleep(ctx, backoff) {
			return nil
		}
		backoff = min(2*backoff, 30*time.Second)
	}
	for {
		recs, err := g.src.Poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrSourceClosed) {
			return err
		}
		if err != nil {
			g.logger.Warn("fuse guard: reading the fuse topic failed", "error", err)
			if !sleep(ctx, pollRetry) {
				return nil
			}
			continue
		}
		for i := range recs {
			g.handle(&recs[i])
		}
		g.repair(ctx)
	}
}

func (g *Guard) handle(r *Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer func() {
		if end, ok := g.pending[r.Partition]; ok && r.Offset+1 >= end {
			delete(g.pending, r.Partition)
			if len(g.pending) == 0 {
				g.ready = true
			}
		}
	}()
	if r.Control {
		return
	}
	g.records.Add(1)
	key := string(r.Key)
	cur, had := g.current[key]
	if had && r.Value != nil && bytes.Equal(r.Value, cur.value) {
		cur.lastOK = true // the current command (ours, or our re-publish)
		g.current[key] = cur
		return
	}
	if r.Value != nil {
		if cmd, err := fuseschema.DecodeFuseCommand(r.Value); err == nil && cmd.Target.String() == key &&
			g.verify.Verify(&cmd, g.clock()) == nil && (!had || fuseschema.CompareFuseOrder(&cmd, &cur.cmd) > 0) {
			g.current[key] = guarded{cmd: cmd, value: bytes.Clone(r.Value), lastOK: true}
			return
		}
	}
	g.foreign.Add(1)
	if had {
		cur.lastOK = false
		g.current[key] = cur
		g.logger.Warn("fuse guard: the latest record of a target is not fusebox's current command; re-publishing it",
			"target", key, "tombstone", r.Value == nil, "partition", r.Partition, "offset", r.Offset, "current_version", cur.cmd.Version)
	}
}

// repair re-publishes the current command of every key whose latest
// record is not it, once the catch-up is done.
func (g *Guard) repair(ctx context.Context) {
	g.mu.Lock()
	if !g.ready {
		g.mu.Unlock()
		return
	}
	type job struct{ key, value []byte }
	var jobs []job
	for k, c := range g.current {
		if !c.lastOK {
			jobs = append(jobs, job{[]byte(k), c.value})
		}
	}
	g.mu.Unlock()
	for _, j := range jobs {
		if err := g.publish(ctx, j.key, j.value); err != nil {
			g.publishErrs.Add(1)
			g.logger.Warn("fuse guard: re-publishing failed; will retry", "target", string(j.key), "error", err)
			continue
		}
		g.republished.Add(1)
		g.mu.Lock()
		if c, ok := g.current[string(j.key)]; ok && bytes.Equal(c.value, j.value) {
			// Optimistic: our record is now the latest unless another
			// lands after it, which handle will see.
			c.lastOK = true
			g.current[string(j.key)] = c
		}
		g.mu.Unlock()
	}
}

// Verify checks c as a gateway with the signer's keys would (Keyring.Verify
// at now); an unsigned signer accepts only unsigned commands. fusebox's
// Guard uses it to tell its own commands from anyone else's.
func (s *Signer) Verify(c *fuseschema.FuseCommand, now time.Time) error {
	if s.ring == nil {
		if c.KeyID == "" && c.Signature == "" {
			return nil
		}
		return ErrUnknownKey
	}
	return s.ring.Verify(c, now)
}
