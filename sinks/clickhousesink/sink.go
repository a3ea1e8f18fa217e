// Package clickhousesink writes verdicts, fuse commands and per-minute span
// rollups to ClickHouse over the native protocol (clickhouse-go v2), and
// owns the schema: versioned migrations (Migrate) that run on ClickHouse
// 18.16 and on current servers.
//
// The writer buffers rows in memory up to Config.BufferCap and inserts them
// in batches of at most Config.BatchSize rows per table, at least every
// Config.FlushInterval. A failed insert is retried with capped exponential
// backoff, forever: while ClickHouse is down the buffer fills, Write blocks
// (back-pressure), Flush does not return nil, so the engine stops
// committing input offsets — no row is dropped and memory stays bounded.
// When the server answers again, the pool is reopened and the backlog goes
// out by itself.
//
// Within one flush cycle verdicts are inserted before rollups and rollups
// before fuse commands, so a command row never becomes visible before the
// verdicts written ahead of it.
package clickhousesink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// ErrMisconfigured is wrapped by the *InsertError that Write and Flush
// return while the last insert failed with an error retrying cannot fix
// (missing table: run `fusebox migrate`; wrong password; no permission).
// The sink keeps retrying and clears the error on the next success.
var ErrMisconfigured = errors.New("clickhousesink: ClickHouse rejects the inserts")

// InsertError says which table's insert failed.
type InsertError struct {
	Table     string
	Rows      int
	Permanent bool
	Err       error
}

func (e *InsertError) Error() string {
	return fmt.Sprintf("clickhousesink: insert %d rows into %s: %v", e.Rows, e.Table, e.Err)
}

func (e *InsertError) Unwrap() []error {
	if e.Permanent {
		return []error{ErrMisconfigured, e.Err}
	}
	return []error{e.Err}
}

// Sink is the ClickHouse sink; it implements engine.Sink and
// sinks.MetricsSource.
type Sink struct {
	cfg     Config
	backoff sinks.Backoff
	open    func() (driver.Conn, error)
	conn    driver.Conn // used by the flusher goroutine only (and Close after it stopped)

	mu        sync.Mutex
	verdicts  []schemas.Verdict // written, not yet taken by a flush cycle
	commands  []schemas.FuseCommand
	rollups   []schemas.Rollup
	incidents []schemas.Incident
	buffered  int    // rows held: pending plus the running cycle's not yet inserted
	written   uint64 // rows accepted by Write, ever
	durable   uint64 // rows inserted, as a prefix of written
	changed   chan struct{}
	closing   bool
	closingCh chan struct{}
	lastErr   error
	permErr   *InsertError // set while the last attempt failed permanently

	kick    chan struct{}
	stopCh  chan struct{} // closed when Close gives up: the flusher abandons its cycle
	stopCtx context.Context
	stop    context.CancelFunc // cancels a running insert when Close gives up
	done    chan struct{}      // closed when the flusher returned

	rowsOut     [4]atomic.Uint64 // per table: verdicts, commands, rollups, incidents
	insertErrs  [4]atomic.Uint64
	batches     atomic.Uint64
	reconnects  atomic.Uint64
	blockedNano atomic.Int64
}

const (
	tVerdicts = iota
	tCommands
	tRollups
	tIncidents
)

var tableNames = [4]string{TableVerdicts, TableFuseCommands, TableRollupsInput, TableIncidents}

// New validates cfg, opens the connection pool (without dialling: an
// unreachable server only delays the first insert) and starts the flusher.
// The tables must exist (Migrate); until they do, Write and Flush report
// ErrMisconfigured.
func New(cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts, err := cfg.Options("")
	if err != nil {
		return nil, err
	}
	open := func() (driver.Conn, error) {
		o := *opts
		return chOpen(&o)
	}
	conn, err := open()
	if err != nil {
		return nil, fmt.Errorf("clickhousesink: open: %w", err)
	}
	stopCtx, stop := context.WithCancel(context.Background())
	s := &Sink{
		stopCtx:   stopCtx,
		stop:      stop,
		cfg:       cfg,
		backoff:   sinks.Backoff{Min: cfg.RetryMin, Max: cfg.RetryMax},
		open:      open,
		conn:      conn,
		changed:   make(chan struct{}),
		closingCh: make(chan struct{}),
		kick:      make(chan struct{}, 1),
		stopCh:    make(chan struct{}),
		done:      make(chan struct{}),
	}
	go s.flusher()
	return s, nil
}

// notifyLocked wakes everyone waiting for buffer space or durability.
func (s *Sink) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Sink) kickFlusher() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Write validates out and buffers its rows (verdicts, then rollups, then
// commands), blocking while BufferCap rows are held. Nothing of out is
// buffered when a row is invalid (the error wraps schemas.ErrInvalid or is a
// *schemas.FieldError). When ctx ends while blocked, the rows buffered so
// far stay (they will be inserted) and ctx.Err() is returned.
func (s *Sink) Write(ctx context.Context, out schemas.Output) error {
	for i := range out.Verdicts {
		if err := out.Verdicts[i].Validate(); err != nil {
			return fmt.Errorf("clickhousesink: verdicts[%d] (id %q): %w", i, out.Verdicts[i].ID, err)
		}
	}
	for i := range out.Commands {
		if err := out.Commands[i].Validate(); err != nil {
			return fmt.Errorf("clickhousesink: commands[%d] (target %s, version %d): %w", i, out.Commands[i].Target.String(), out.Commands[i].Version, err)
		}
	}
	for i := range out.Rollups {
		if err := validateRollup(&out.Rollups[i]); err != nil {
			return fmt.Errorf("clickhousesink: rollups[%d] (%s): %w", i, out.Rollups[i].Key.String(), err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return sinks.ErrClosed
	}
	if s.permErr != nil {
		return s.permErr
	}
	v, r, c, in := out.Verdicts, out.Rollups, out.Commands, out.Incidents
	for len(v)+len(r)+len(c)+len(in) > 0 {
		for s.buffered >= s.cfg.BufferCap {
			if err := s.waitLocked(ctx); err != nil {
				return err
			}
		}
		room := s.cfg.BufferCap - s.buffered
		take := func(n int) int { k := min(n, room); room -= k; return k }
		k := take(len(v))
		s.verdicts = append(s.verdicts, v[:k]...)
		v = v[k:]
		k2 := take(len(r))
		s.rollups = append(s.rollups, r[:k2]...)
		r = r[k2:]
		k3 := take(len(c))
		s.commands = append(s.commands, c[:k3]...)
		c = c[k3:]
		k4 := take(len(in))
		s.incidents = append(s.incidents, in[:k4]...)
		in = in[k4:]
		n := k + k2 + k3 + k4
		s.buffered += n
		s.written += uint64(n)
		if len(s.verdicts) >= s.cfg.BatchSize || len(s.rollups) >= s.cfg.BatchSize || len(s.commands) >= s.cfg.BatchSize || len(s.incidents) >= s.cfg.BatchSize || s.buffered >= s.cfg.BufferCap {
			s.kickFlusher()
		}
	}
	return nil
}

// waitLocked waits (s.mu released) until something changes, ctx ends or the
// sink closes. Called with s.mu held; returns with it held.
func (s *Sink) waitLocked(ctx context.Context) error {
	ch := s.changed
	s.mu.Unlock()
	start := nowNano()
	var err error
	select {
	case <-ch:
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.closingCh:
		err = sinks.ErrClosed
	}
	s.blockedNano.Add(nowNano() - start)
	s.mu.Lock()
	return err
}

// Flush returns nil once every row written before the call is inserted. It
// returns the *InsertError (wrapping ErrMisconfigured) at once while the last
// insert failed permanently, and a *sinks.FlushError when ctx ends first.
func (s *Sink) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return sinks.ErrClosed
	}
	return s.flushLocked(ctx, true)
}

func (s *Sink) flushLocked(ctx context.Context, failFast bool) error {
	target := s.written
	if s.durable >= target {
		return nil
	}
	s.kickFlusher()
	for s.durable < target {
		if failFast && s.permErr != nil {
			return s.permErr
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return &sinks.FlushError{Sink: "clickhousesink", Pending: int(target - s.durable), Missing: "rows not inserted", Op: "insert", LastErr: s.lastErr, Err: ctx.Err()}
		}
	}
	return nil
}

// Close stops accepting writes, inserts what it can until ctx ends, stops
// the flusher and closes the pool. Rows not inserted by then are reported
// in the error; they were never acknowledged upstream, so the engine
// replays them. Calling Close again returns nil.
func (s *Sink) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	close(s.closingCh)
	err := s.flushLocked(ctx, false)
	s.mu.Unlock()
	close(s.stopCh)
	s.stop()
	<-s.done
	if cerr := s.conn.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("clickhousesink: close: %w", cerr)
	}
	return err
}

// Health returns the error of the last insert attempt while it is failing
// (ClickHouse unreachable, or refusing the rows), nil once an insert
// succeeds again — or before any failed. The rows stay buffered and are
// retried meanwhile.
func (s *Sink) Health() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Metrics reports rows inserted and insert errors per table, batches,
// reconnects, rows buffered and the time Write spent blocked.
func (s *Sink) Metrics() []sinks.Metric {
	var out []sinks.Metric
	for t, name := range tableNames {
		l := []sinks.Label{{Name: "sink", Value: "clickhouse"}, {Name: "table", Value: name}}
		out = append(out,
			sinks.Metric{Name: "fusebox_sink_records_total", Help: "Rows inserted.", Kind: sinks.Counter, Labels: l, Value: float64(s.rowsOut[t].Load())},
			sinks.Metric{Name: "fusebox_sink_errors_total", Help: "Failed insert attempts (each is retried).", Kind: sinks.Counter, Labels: l, Value: float64(s.insertErrs[t].Load())})
	}
	l := []sinks.Label{{Name: "sink", Value: "clickhouse"}}
	s.mu.Lock()
	buffered := s.buffered
	s.mu.Unlock()
	return append(out,
		sinks.Metric{Name: "fusebox_sink_batches_total", Help: "Successful insert batches.", Kind: sinks.Counter, Labels: l, Value: float64(s.batches.Load())},
		sinks.Metric{Name: "fusebox_sink_reconnects_total", Help: "Connection pool reopened after a connection error.", Kind: sinks.Counter, Labels: l, Value: float64(s.reconnects.Load())},
		sinks.Metric{Name: "fusebox_sink_pending_records", Help: "Rows held and not yet inserted.", Kind: sinks.Gauge, Labels: l, Value: float64(buffered)},
		sinks.Metric{Name: "fusebox_sink_blocked_seconds_total", Help: "Time Write spent waiting for buffer space.", Kind: sinks.Counter, Labels: l, Value: float64(s.blockedNano.Load()) / 1e9},
	)
}

var _ sinks.MetricsSource = (*Sink)(nil)
