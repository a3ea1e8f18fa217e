package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// BenchmarkSinkVerdicts measures verdict produce through kfake (in-process,
// one request goroutine: not a Kafka performance reference): one op writes
// 10000 verdicts in Outputs of 100 and flushes until all are acknowledged.
func BenchmarkSinkVerdicts(b *testing.B) {
	k := testharness.StartKafka(b)
	cfg := DefaultConfig()
	cfg.Brokers = k.Brokers
	s, err := New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	const perOp, perWrite = 10000, 100
	outs := make([]schemas.Output, perOp/perWrite)
	for w := range outs {
		for i := 0; i < perWrite; i++ {
			outs[w].Verdicts = append(outs[w].Verdicts, makeVerdict(w*perWrite+i))
		}
	}
	v := makeVerdict(1)
	enc, _ := sinks.MarshalVerdictJSON(nil, &v)
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
	b.ReportMetric(float64(b.N*perOp)/time.Since(start).Seconds(), "records/s")
	b.ReportMetric(float64(len(enc)), "bytes/record")
}

func BenchmarkMarshalVerdictJSON(b *testing.B) {
	v := makeVerdict(1)
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for n := 0; n < b.N; n++ {
		var err error
		if buf, err = sinks.MarshalVerdictJSON(buf[:0], &v); err != nil {
			b.Fatal(err)
		}
	}
}
