package pipeline_test

// Benchmarks of issue 6: insert rates into ClickHouse through the sink, and
// end-to-end spans/s with both sinks on, each beside a baseline measured in
// the same run so that the figures read as ratios on any machine:
//
//	go test -run '^$' -bench . ./pipeline/            # 100k spans, 20k rows per insert round
//	go test -run '^$' -bench . -short ./pipeline/     # 20k spans, 5k rows: seconds
//	go test -run '^$' -bench EndToEnd -benchtime 3x ./pipeline/   # three samples
//
// kfake runs in the benchmark's process and clickhouse-server beside it on
// the same cores, so absolute figures understate a real deployment; the
// ratios are the point.

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
)

// benchRows is the rows of one insert round: 20,000, or 5,000 with -short.
func benchRows() int {
	if testing.Short() {
		return 5000
	}
	return 20000
}

// benchSpans is the LLM spans of the end-to-end benchmark: 100,000, or
// 20,000 with -short.
func benchSpans() int64 {
	if testing.Short() {
		return 20000
	}
	return 100000
}

// benchVerdict is a tail verdict as the engine writes it: four details, an
// interval, a unique id per (round, i).
func benchVerdict(round, i int) schemas.Verdict {
	key := schemas.Key{Tenant: "tenant-" + strconv.Itoa(i%50), Service: "chat", Model: "gpt-4o-mini", Variant: "baseline"}
	end := e2eStart.UnixNano() + int64(round*100000+i)*int64(time.Minute)
	v := schemas.Verdict{Processor: "tail", SLO: "latency", Metric: "duration_ms", Key: key,
		WindowStartUnixNano: end - int64(5*time.Minute), WindowEndUnixNano: end,
		Value: 4200 + float64(i%1000), Threshold: 6000, Lower: 3900, Upper: 4800, IntervalLevel: 0.95,
		Status: schemas.StatusOK, Method: "gpd_mle_profile", N: 660, ConfigVersion: "bench",
		Details: []schemas.Detail{{Name: "xi", Value: 0.12}, {Name: "sigma", Value: 310}, {Name: "u", Value: 1900}, {Name: "exceedances", Value: 33}}}
	v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
	return v
}

// rollupSamples is the latencies per rollup row: about what one key sends
// in a minute at the end-to-end tests' rates (50 calls/s over 36 keys).
const rollupSamples = 80

func benchRollup(round, i int) schemas.Rollup {
	d := make([]float64, rollupSamples)
	f := make([]float64, rollupSamples)
	for j := range d {
		d[j] = 500 + float64((i*31+j*17)%900)
		f[j] = d[j] * 0.2
	}
	return schemas.Rollup{Key: schemas.Key{Tenant: "tenant-" + strconv.Itoa(i%50), Service: "chat", Model: "m" + strconv.Itoa(round), Variant: "baseline"},
		MinuteUnixNano: e2eStart.UnixNano() + int64(i)*int64(time.Minute), N: rollupSamples, Errors: 1, InputTokens: 40000, OutputTokens: 16000,
		DurationsMs: d, TTFTsMs: f}
}

// BenchmarkClickHouseSink measures verdict and rollup rows/s into
// ClickHouse through clickhousesink.Sink (Write in outputs of 100 rows,
// then Flush; the sink inserts in chunks of the batch size), and, in the
// same op, the same rows inserted directly with one InsertVerdicts /
// InsertRollups call per batch: sink/raw is the sink's own cost. One op is
// one round of benchRows() rows each way.
func BenchmarkClickHouseSink(b *testing.B) {
	ch := testharness.StartClickHouse(b)
	for _, table := range []string{"verdicts", "rollups"} {
		for _, batch := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/batch=%d", table, batch), func(b *testing.B) {
				db := ch.NewDatabase(b)
				conn := ch.ConnDatabase(b, db)
				ctx := context.Background()
				if _, err := clickhousesink.Migrate(ctx, conn, db); err != nil {
					b.Fatal(err)
				}
				cfg := clickhousesink.DefaultConfig()
				cfg.Addrs, cfg.Database, cfg.Username, cfg.Password = []string{ch.Addr}, db, ch.Username, ch.Password
				cfg.BatchSize, cfg.BufferCap = batch, max(batch*4, clickhousesink.DefaultBufferCap)
				s, err := clickhousesink.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close(ctx)
				rows := benchRows()
				var sinkDur, rawDur time.Duration
				b.ResetTimer()
				for n := 0; n < b.N; n++ {
					b.StopTimer()
					vs := make([]schemas.Verdict, rows)
					rs := make([]schemas.Rollup, rows)
					for i := range vs {
						if table == "verdicts" {
							vs[i] = benchVerdict(2*n, i)
						} else {
							rs[i] = benchRollup(2*n, i)
						}
					}
					b.StartTimer()
					t0 := time.Now()
					for i := 0; i < rows; i += 100 {
						var out schemas.Output
						if table == "verdicts" {
							out.Verdicts = vs[i:min(i+100, rows)]
						} else {
							out.Rollups = rs[i:min(i+100, rows)]
						}
						if err := s.Write(ctx, out); err != nil {
							b.Fatal(err)
						}
					}
					if err := s.Flush(ctx); err != nil {
						b.Fatal(err)
					}
					sinkDur += time.Since(t0)

					b.StopTimer()
					for i := range vs {
						if table == "verdicts" {
							vs[i] = benchVerdict(2*n+1, i)
						} else {
							rs[i] = benchRollup(2*n+1, i)
						}
					}
					b.StartTimer()
					t0 = time.Now()
					for i := 0; i < rows; i += batch {
						var err error
						if table == "verdicts" {
							err = clickhousesink.InsertVerdicts(ctx, conn, db, vs[i:min(i+batch, rows)])
						} else {
							err = clickhousesink.InsertRollups(ctx, conn, db, rs[i:min(i+batch, rows)])
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					rawDur += time.Since(t0)
				}
				total := float64(b.N * rows)
				b.ReportMetric(total/sinkDur.Seconds(), "sink-rows/s")
				b.ReportMetric(total/rawDur.Seconds(), "raw-rows/s")
				b.ReportMetric(rawDur.Seconds()/sinkDur.Seconds(), "sink/raw")
				if table == "rollups" {
					b.ReportMetric(total*rollupSamples/sinkDur.Seconds(), "sink-samples/s")
				}
			})
		}
	}
}

// discardSink accepts everything: the keyed stage needs a sink, and this
// one costs nothing.
type discardSink struct{}

func (discardSink) Write(context.Context, schemas.Output) error { return nil }
func (discardSink) Flush(context.Context) error                 { return nil }
func (discardSink) Close(context.Context) error                 { return nil }

// countingHandler acknowledges every batch at once and counts its spans.
type countingHandler struct{ spans *atomic.Int64 }

func (h countingHandler) Handle(_ context.Context, b *ingest.Batch) error {
	var n int64
	for i := range b.Records {
		n += int64(len(b.Records[i].Spans))
	}
	h.spans.Add(n)
	b.Ack()
	return nil
}
func (countingHandler) Close(context.Context, ingest.CloseReason) {}

// BenchmarkEndToEnd publishes benchSpans() LLM spans (the e2e scenario at 50
// calls/s: 36 keys, incidents, 20% extra non-LLM spans, 2% corrections,
// OTLP protobuf, 100 spans a message, 6 source partitions) once, then each
// op runs four consumers of them from the start, one after the other:
//
//   - ingest: fusebox's ingest consumer alone (fetch, decode OTLP, ack): the
//     input ceiling;
//   - none: the whole pipeline (router, keyed topic, 4 keyed partitions,
//     processors, breaker, checkpoints to the state topic) with a discarding
//     sink;
//   - kafka: the same with the Kafka sink;
//   - both: the same with the Kafka and ClickHouse sinks (batch 5000, buffer
//     100,000, flush every 1s: the SLO file's defaults).
//
// A pipeline's time runs from Run to the end of the checkpoint covering the
// last span (the checkpoint on shutdown, requested as soon as the keyed
// stage has applied every span): all output durable, all input committed.
// Checkpoints every 1s.
func BenchmarkEndToEnd(b *testing.B) {
	k := testharness.StartKafka(b)
	ch := testharness.StartClickHouse(b)
	want := benchSpans()
	sc := e2eScenario(50, time.Duration(want/50)*time.Second)
	pub := publishScenario(context.Background(), b, k, sc, 0)
	if pub.Spans != want {
		b.Fatalf("published %d spans, want %d", pub.Spans, want)
	}
	rates := map[string][]float64{}
	var startup []float64 // ms from Run to the first span applied, per pipeline run
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		rates["ingest"] = append(rates["ingest"], benchIngest(b, k, want, n))
		for _, variant := range []string{"none", "kafka", "both"} {
			o := e2eOpts{brokers: k.Brokers, group: fmt.Sprintf("bench-%s-%d", variant, n), suffix: fmt.Sprintf(".%s.%d", variant, n),
				checkpointEvery: time.Second, clickhouseFlushEvery: time.Second, chBatch: 5000, chBuffer: 100000}
			var extra []engine.Sink
			switch variant {
			case "none":
				o.noKafkaSink = true
				extra = []engine.Sink{discardSink{}}
			case "both":
				o = withClickHouse(o, ch, ch.NewDatabase(b))
			}
			rate, first := benchPipeline(b, e2eConfig(b, o), extra, want)
			rates[variant] = append(rates[variant], rate)
			startup = append(startup, float64(first.Milliseconds()))
		}
	}
	b.StopTimer()
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	for _, v := range []string{"ingest", "none", "kafka", "both"} {
		b.ReportMetric(mean(rates[v]), v+"-spans/s")
	}
	ratio := func(a, c string) float64 {
		s := 0.0
		for i := range rates[a] {
			s += rates[a][i] / rates[c][i]
		}
		return s / float64(len(rates[a]))
	}
	b.ReportMetric(mean(startup), "startup-ms")
	b.ReportMetric(ratio("both", "none"), "both/none")
	b.ReportMetric(ratio("both", "ingest"), "both/ingest")
	b.ReportMetric(ratio("none", "ingest"), "none/ingest")
}

// benchIngest consumes the span and correction topics with a fresh group
// until want spans are decoded, and returns spans/s.
func benchIngest(b *testing.B, k *testharness.Kafka, want int64, n int) float64 {
	b.Helper()
	var spans atomic.Int64
	c, err := ingest.New(ingest.Brokers(k.Brokers...), ingest.Group("bench-ingest-"+strconv.Itoa(n)),
		ingest.SpanTopics("otlp_spans"), ingest.CorrectionTopics("fusebox.corrections"),
		ingest.Handlers(func(string, int32) ingest.PartitionHandler { return countingHandler{&spans} }))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- c.Run(ctx) }()
	for spans.Load() < want {
		select {
		case err := <-done:
			cancel()
			b.Fatalf("ingest stopped at %d of %d spans: %v", spans.Load(), want, err)
		case <-time.After(2 * time.Millisecond):
		}
		if time.Since(start) > 5*time.Minute {
			cancel()
			b.Fatalf("ingest: %d of %d spans after 5 minutes", spans.Load(), want)
		}
	}
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return float64(want) / elapsed.Seconds()
}

// benchPipeline runs one pipeline until every span is applied and the
// checkpoint on shutdown is done, and returns spans/s and the time to the
// first span applied (group joins, topic metadata: the fixed cost in the
// rate).
func benchPipeline(b *testing.B, cfg *config.File, extra []engine.Sink, want int64) (float64, time.Duration) {
	b.Helper()
	r := startRun(b, cfg, nil, extra...)
	var first time.Duration
	for {
		st := r.p.Keyed().Stats()
		if first == 0 && st.Spans > 0 {
			first = time.Since(r.start)
		}
		if st.Spans+st.LateSpans >= want {
			break
		}
		select {
		case err := <-r.done:
			r.done <- err
			b.Fatalf("pipeline stopped at %d of %d spans: %v", st.Spans+st.LateSpans, want, err)
		case <-time.After(2 * time.Millisecond):
		}
		if time.Since(r.start) > 5*time.Minute {
			b.Fatalf("pipeline: %d of %d spans after 5 minutes", st.Spans+st.LateSpans, want)
		}
	}
	r.stop(b)
	r.mu.Lock()
	elapsed := r.lastCkpt.Sub(r.start)
	r.mu.Unlock()
	if elapsed <= 0 {
		b.Fatal("no checkpoint after the last span")
	}
	return float64(want) / elapsed.Seconds(), first
}
