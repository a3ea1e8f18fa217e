package clickhousesink

import (
	"context"
	"time"

	chgo "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// chOpen is clickhouse-go's Open (a variable so the package has one place
// that opens pools).
var chOpen = chgo.Open

func nowNano() int64 { return time.Now().UnixNano() }

// flusher runs flush cycles on the interval, when Write or Flush kicks it,
// until Close stops it.
func (s *Sink) flusher() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.kick:
		case <-s.stopCh:
			return
		}
		if !s.cycle() {
			return
		}
	}
}

// cycle takes every pending row and inserts it: verdicts, then rollups, then
// incident records, then commands (which cite verdicts and incident
// records), in chunks of BatchSize, each chunk retried until it succeeds.
// It reports false when Close stopped it half-way.
func (s *Sink) cycle() bool {
	s.mu.Lock()
	vs, rs, cs, is := s.verdicts, s.rollups, s.commands, s.incidents
	s.verdicts, s.rollups, s.commands, s.incidents = nil, nil, nil, nil
	target := s.written
	s.mu.Unlock()

	db := s.cfg.Database
	for len(vs) > 0 {
		n := min(len(vs), s.cfg.BatchSize)
		chunk := vs[:n]
		if !s.insert(tVerdicts, n, func(ctx context.Context, c driver.Conn) error { return InsertVerdicts(ctx, c, db, chunk) }) {
			return false
		}
		vs = vs[n:]
	}
	for len(rs) > 0 {
		n := min(len(rs), s.cfg.BatchSize)
		chunk := rs[:n]
		if !s.insert(tRollups, n, func(ctx context.Context, c driver.Conn) error { return InsertRollups(ctx, c, db, chunk) }) {
			return false
		}
		rs = rs[n:]
	}
	for len(is) > 0 {
		n := min(len(is), s.cfg.BatchSize)
		chunk := is[:n]
		if !s.insert(tIncidents, n, func(ctx context.Context, c driver.Conn) error { return InsertIncidents(ctx, c, db, chunk) }) {
			return false
		}
		is = is[n:]
	}
	for len(cs) > 0 {
		n := min(len(cs), s.cfg.BatchSize)
		chunk := cs[:n]
		if !s.insert(tCommands, n, func(ctx context.Context, c driver.Conn) error { return InsertCommands(ctx, c, db, chunk) }) {
			return false
		}
		cs = cs[n:]
	}
	s.mu.Lock()
	if target > s.durable {
		s.durable = target
		s.notifyLocked()
	}
	s.mu.Unlock()
	return true
}

// insert runs one chunk's insert until it succeeds (then frees its buffer
// space) or Close stops the sink (false).
func (s *Sink) insert(table, rows int, do func(context.Context, driver.Conn) error) bool {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.stopCtx, s.cfg.InsertTimeout)
		err := do(ctx, s.conn)
		cancel()
		if err == nil {
			s.rowsOut[table].Add(uint64(rows))
			s.batches.Add(1)
			s.mu.Lock()
			s.buffered -= rows
			s.lastErr, s.permErr = nil, nil
			s.notifyLocked()
			s.mu.Unlock()
			return true
		}
		s.insertErrs[table].Add(1)
		ie := &InsertError{Table: tableNames[table], Rows: rows, Permanent: isPermanent(err), Err: err}
		s.mu.Lock()
		s.lastErr = ie
		if ie.Permanent {
			s.permErr = ie
		}
		s.notifyLocked() // wake Flush so it can report a permanent error
		s.mu.Unlock()
		if isConnectionError(err) {
			s.reopen()
		}
		if !s.backoff.Sleep(s.stopCtx, s.stopCh, attempt) {
			return false
		}
	}
}

// reopen replaces the connection pool after a connection error, so that no
// broken connection is reused when the server comes back.
func (s *Sink) reopen() {
	c, err := s.open()
	if err != nil {
		return // keep the old pool; the next attempt reports the error
	}
	old := s.conn
	s.conn = c
	s.reconnects.Add(1)
	_ = old.Close()
}
