package gen

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
)

// BenchmarkEncodeStep encodes one second of the demo scenario's traffic
// (about 400 LLM spans, 80 other spans and the corrections due) into
// records; spans/s is LLM spans encoded per second of CPU.
func BenchmarkEncodeStep(b *testing.B) {
	for _, tc := range []struct {
		name     string
		encoding string
		keyed    bool
	}{{"proto", EncodingProto, false}, {"json", EncodingJSON, false}, {"proto_keyed", EncodingProto, true}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Encoding, cfg.KeyByTrace = tc.encoding, tc.keyed
			cfg = cfg.withDefaults()
			g, err := traffic.New(traffic.Demo(), time.Unix(1_700_000_000, 0))
			if err != nil {
				b.Fatal(err)
			}
			batch := g.Next(time.Second)
			b.ReportAllocs()
			b.ResetTimer()
			var bytes int
			for i := 0; i < b.N; i++ {
				msgs, err := encodeStep(&cfg, batch)
				if err != nil {
					b.Fatal(err)
				}
				for _, m := range msgs {
					bytes += len(m.rec.Value)
				}
			}
			b.ReportMetric(float64(len(batch.Spans)*b.N)/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(float64(bytes)/float64(b.N*(len(batch.Spans)+len(batch.Other))), "B/span")
		})
	}
}
