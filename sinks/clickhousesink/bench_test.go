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

// The insert benchmarks report rows/s into the harness's server (Debian's
// 18.16 here). Each op inserts one batch; ids are unique per op.

func benchDB(b *testing.B) (*testharness.ClickHouse, string) {
	ch := testharness.StartClickHouse(b)
	db := ch.NewDatabase(b)
	if _, err := Migrate(context.Background(), ch.Conn(b), db); err != nil {
		b.Fatal(err)
	}
	return ch, db
}

func BenchmarkInsertVerdicts(b *testing.B) {
	for _, batch := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ch, db := benchDB(b)
			conn := ch.Conn(b)
			vs := make([]schemas.Verdict, batch)
			for i := range vs {
				vs[i] = makeVerdict("tail", i)
			}
			b.ResetTimer()
			start := time.Now()
			for n := 0; n < b.N; n++ {
				for i := range vs {
					vs[i].ID = fmt.Sprintf("%d-%d", n, i)
				}
				if err := InsertVerdicts(context.Background(), conn, db, vs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

func BenchmarkInsertRollups(b *testing.B) {
	for _, samples := range []int{10, 100} {
		const batch = 1000
		b.Run(fmt.Sprintf("batch=%d/latencies=%d", batch, samples), func(b *testing.B) {
			ch, db := benchDB(b)
			conn := ch.Conn(b)
			rng := rand.New(rand.NewPCG(1, 2))
			rs := make([]schemas.Rollup, batch)
			for i := range rs {
				key := schemas.Key{Tenant: fmt.Sprintf("t%d", i%50), Service: "chat", Model: fmt.Sprintf("m%d", i%7), Variant: "baseline"}
				rs[i] = makeRollup(rng, key, t0.Add(time.Duration(i/50)*time.Minute), samples)
			}
			b.ResetTimer()
			start := time.Now()
			for n := 0; n < b.N; n++ {
				if err := InsertRollups(context.Background(), conn, db, rs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// BenchmarkSinkVerdicts measures the sink end to end (validation, buffer,
// flusher, insert) with the default batch size: one op writes 10000
// verdicts in Outputs of 100 and flushes.
func BenchmarkSinkVerdicts(b *testing.B) {
	ch, db := benchDB(b)
	cfg := DefaultConfig()
	cfg.Addrs, cfg.Database, cfg.Username, cfg.Password = []string{ch.Addr}, db, ch.Username, ch.Password
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	const perOp, perWrite = 10000, 100
	outs := make([]schemas.Output, perOp/perWrite)
	for w := range outs {
		for i := 0; i < perWrite; i++ {
			outs[w].Verdicts = append(outs[w].Verdicts, makeVerdict("tail", w*perWrite+i))
		}
	}
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		for _, out := range outs {
			if err := s.Write(ctx, out); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*perOp)/time.Since(start).Seconds(), "rows/s")
}
