package clickhousesink

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// TestServerDownBlocksWritesAndLosesNothing stops clickhouse-server for about
// 20 s while a writer streams verdicts: Write must block once BufferCap rows
// are held (memory bounded), Flush must not report success, and after the
// restart everything written must be in the table exactly once, without any
// action from the test on the sink.
func TestServerDownBlocksWritesAndLosesNothing(t *testing.T) {
	const (
		outage     = 20 * time.Second
		bufferCap  = 2000
		batchSize  = 250
		perWrite   = 50
		totalRows  = 30000
		flushEvery = 10 // writes
	)
	srv := testharness.StartPrivateClickHouse(t)
	admin := srv.Conn(t)
	ctx := context.Background()
	const db = "fusebox_outage"
	if _, err := Migrate(ctx, admin, db); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Addrs = []string{srv.Addr}
	cfg.Database = db
	cfg.BatchSize = batchSize
	cfg.BufferCap = bufferCap
	cfg.FlushInterval = 50 * time.Millisecond
	cfg.RetryMin = 50 * time.Millisecond
	cfg.RetryMax = time.Second
	cfg.DialTimeout = time.Second
	cfg.InsertTimeout = 5 * time.Second
	s := newSink(t, cfg)

	// The writer behaves like the engine: Write, and every few writes a Flush
	// whose success would allow an offset commit.
	var written, committed atomic.Int64
	writerErr := make(chan error, 1)
	go func() {
		i := 0
		for w := 0; i < totalRows; w++ {
			out := schemas.Output{}
			for k := 0; k < perWrite && i < totalRows; k++ {
				out.Verdicts = append(out.Verdicts, makeVerdict("tail", i))
				i++
			}
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			err := s.Write(wctx, out)
			cancel()
			if err != nil {
				writerErr <- err
				return
			}
			written.Store(int64(i))
			if w%flushEvery == 0 {
				// A short Flush: when it fails the offsets are not
				// committed and the writer carries on, so that Write
				// itself meets the full buffer.
				fctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				err := s.Flush(fctx)
				cancel()
				var fe *sinks.FlushError
				switch {
				case err == nil:
					committed.Store(int64(i))
				case !errors.As(err, &fe):
					writerErr <- err
					return
				}
			}
			time.Sleep(2 * time.Millisecond) // a steady stream, not a burst
		}
		writerErr <- nil
	}()

	// Let it run, then stop the server.
	for written.Load() < 3000 {
		time.Sleep(10 * time.Millisecond)
	}
	srv.Kill()
	downAt := time.Now()
	// A Flush that started before the kill may still succeed with rows
	// inserted just before it; give it a moment to settle.
	time.Sleep(300 * time.Millisecond)
	committedAtKill := committed.Load()
	t.Logf("server killed after %d rows written, %d committed", written.Load(), committed.Load())

	// During the outage: sample the buffer; it must never exceed BufferCap
	// and the writer must come to a stop.
	maxPending := 0.0
	var stalledAt int64 = -1
	for time.Since(downAt) < outage {
		if p := metricValue(t, s, "fusebox_sink_pending_records", ""); p > maxPending {
			maxPending = p
		}
		if time.Since(downAt) > outage/2 && stalledAt < 0 {
			stalledAt = written.Load()
		}
		time.Sleep(50 * time.Millisecond)
	}
	endOfOutage := written.Load()
	committedDuringOutage := committed.Load()
	if maxPending > bufferCap {
		t.Errorf("pending rows reached %v, above BufferCap %d", maxPending, bufferCap)
	}
	if maxPending < bufferCap-perWrite {
		t.Errorf("pending rows peaked at %v: the buffer never filled, so Write never had to block", maxPending)
	}
	if committedDuringOutage != committedAtKill {
		t.Errorf("offsets advanced while the server was down: %d committed at the kill, %d at the end", committedAtKill, committedDuringOutage)
	}
	if endOfOutage != stalledAt {
		t.Errorf("the writer kept going while the server was down: %d rows written at mid-outage, %d at the end", stalledAt, endOfOutage)
	}
	fctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	var fe *sinks.FlushError
	if err := s.Flush(fctx); !errors.As(err, &fe) || fe.LastErr == nil {
		t.Errorf("Flush while the server is down: %v, want a FlushError naming the last insert error", err)
	} else {
		t.Logf("Flush during outage: %v", err)
	}
	cancel()
	select {
	case err := <-writerErr:
		t.Fatalf("the writer stopped during the outage: %v", err)
	default:
	}

	srv.Start()
	t.Logf("server restarted after %v; %d rows written, %d committed, pending peak %v",
		time.Since(downAt).Round(time.Second), endOfOutage, committedDuringOutage, maxPending)

	select {
	case err := <-writerErr:
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the writer did not finish after the restart: %d of %d rows written", written.Load(), totalRows)
	}
	fctx, cancel = context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.Flush(fctx); err != nil {
		t.Fatalf("final Flush: %v", err)
	}
	var n, ids uint64
	if err := admin.QueryRow(ctx, "SELECT count(), uniqExact(id) FROM "+db+".verdicts FINAL").Scan(&n, &ids); err != nil {
		t.Fatal(err)
	}
	if n != totalRows || ids != totalRows {
		t.Errorf("after the outage: %d rows, %d ids in ClickHouse; want %d", n, ids, totalRows)
	}
	if r := metricValue(t, s, "fusebox_sink_reconnects_total", ""); !(r >= 1) {
		t.Errorf("reconnects %v, want at least one", r)
	}
}
