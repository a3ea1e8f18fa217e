package testharness

import (
	"context"
	"testing"
	"time"
)

// TestPrivateClickHouseKillAndStart kills the private server (queries fail),
// starts it again on the same port and finds the rows written before.
func TestPrivateClickHouseKillAndStart(t *testing.T) {
	p := StartPrivateClickHouse(t)
	if p.Addr == "" || p.ServerVersion == "" {
		t.Fatalf("Addr %q, ServerVersion %q: want both set", p.Addr, p.ServerVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := p.NewDatabase(t)
	conn := p.ConnDatabase(t, db)
	if err := conn.Exec(ctx, "CREATE TABLE kept (id UInt64, name String) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO kept (id, name)")
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 100; i++ {
		if err := batch.Append(i, "row"); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}

	p.Kill()
	if p.Running() {
		t.Fatal("Running() after Kill")
	}
	qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
	var n uint64
	err = conn.QueryRow(qctx, "SELECT count() FROM kept").Scan(&n)
	qcancel()
	if err == nil {
		t.Fatalf("query on a killed server answered %d rows, want an error", n)
	}
	p.Kill() // a second Kill is a no-op

	p.Start()
	if !p.Running() {
		t.Fatal("not Running() after Start")
	}
	if err := p.StartErr(); err == nil {
		t.Error("StartErr on a running server: want an error")
	}
	after := p.ConnDatabase(t, db)
	var sum uint64
	if err := after.QueryRow(ctx, "SELECT count(), sum(id) FROM kept").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != 100 || sum != 5050 {
		t.Fatalf("after restart: %d rows with id sum %d, want 100 and 5050", n, sum)
	}
}
