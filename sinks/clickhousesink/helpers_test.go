package clickhousesink

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// t0 is the start of the fixtures' event time: 2025-03-04 00:00:00 UTC.
var t0 = time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)

// migratedDB returns a fresh, migrated database on the harness's server.
func migratedDB(t *testing.T, ch *testharness.ClickHouse) string {
	t.Helper()
	db := ch.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Migrate(ctx, ch.Conn(t), db); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// sinkConfig is a Config for the harness's server with fast retries.
func sinkConfig(ch *testharness.ClickHouse, db string) Config {
	cfg := DefaultConfig()
	cfg.Addrs = []string{ch.Addr}
	cfg.Database = db
	cfg.Username = ch.Username
	cfg.Password = ch.Password
	cfg.FlushInterval = 50 * time.Millisecond
	cfg.RetryMin = 50 * time.Millisecond
	cfg.RetryMax = 500 * time.Millisecond
	cfg.DialTimeout = 2 * time.Second
	cfg.InsertTimeout = 10 * time.Second
	return cfg
}

func newSink(t *testing.T, cfg Config) *Sink {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// makeVerdict builds the i-th fixture verdict of a processor: keys, windows
// and values vary with i, the id is schemas.VerdictID of them.
func makeVerdict(processor string, i int) schemas.Verdict {
	key := schemas.Key{Tenant: fmt.Sprintf("t%d", i%3), Service: "chat", Model: fmt.Sprintf("m%d", i%2), Variant: []string{"baseline", "canary"}[i%2]}
	end := t0.Add(time.Duration(i) * time.Minute)
	v := schemas.Verdict{
		Processor: processor, SLO: "latency", Metric: "duration_ms", Key: key,
		WindowStartUnixNano: end.Add(-5 * time.Minute).UnixNano(), WindowEndUnixNano: end.UnixNano() + 123,
		Value: 100 + float64(i), Threshold: 150, Lower: 90 + float64(i), Upper: 120 + float64(i), IntervalLevel: 0.95,
		Status: schemas.StatusOK, Method: "gpd_mle_profile", N: int64(1000 + i),
		Details:       []schemas.Detail{{Name: "xi", Value: 0.1 + float64(i)/1000}, {Name: "sigma", Value: 12.5}, {Name: "u", Value: 80}},
		ConfigVersion: "v1",
	}
	v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
	return v
}

// makeRollup builds a rollup with n latencies drawn from rng.
func makeRollup(rng *rand.Rand, key schemas.Key, minute time.Time, n int) schemas.Rollup {
	r := schemas.Rollup{Key: key, MinuteUnixNano: minute.UnixNano(), N: int64(n)}
	for i := 0; i < n; i++ {
		r.DurationsMs = append(r.DurationsMs, 50+rng.Float64()*950)
		if i%2 == 0 {
			r.TTFTsMs = append(r.TTFTsMs, 5+rng.Float64()*95)
		}
		if rng.IntN(50) == 0 {
			r.Errors++
		}
	}
	r.InputTokens = int64(n * 100)
	r.OutputTokens = int64(n * 250)
	r.Corrections = int64(n / 20)
	return r
}

func flush(t *testing.T, s *Sink) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func write(t *testing.T, s *Sink, out schemas.Output) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Write(ctx, out); err != nil {
		t.Fatalf("Write: %v", err)
	}
}
