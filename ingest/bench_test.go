package ingest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/twmb/franz-go/pkg/kgo"
)

// countHandler acks every batch and signals when want records were seen.
type countHandler struct {
	n     *atomic.Int64
	spans *atomic.Int64
	want  int64
	done  chan struct{}
	first *atomic.Int64 // unix nanos of the first batch
}

func (h *countHandler) Handle(_ context.Context, b *Batch) error {
	h.first.CompareAndSwap(0, time.Now().UnixNano())
	var s int64
	for i := range b.Records {
		s += int64(len(b.Records[i].Spans))
	}
	h.spans.Add(s)
	b.Ack()
	if h.n.Add(int64(len(b.Records))) == h.want {
		close(h.done)
	}
	return nil
}

func (h *countHandler) Close(context.Context, CloseReason) {}

// consumeAll runs a fresh group over the published records until want
// records are acked, and returns the time from Run to the last ack and from
// the first batch to the last ack.
func consumeAll(b *testing.B, k *testharness.Kafka, group string, want int64, opts ...Opt) (total, steady time.Duration, spans int64) {
	var n, sp, first atomic.Int64
	done := make(chan struct{})
	c, err := New(append([]Opt{Brokers(k.Brokers...), Group(group), Handlers(func(string, int32) PartitionHandler {
		return &countHandler{n: &n, spans: &sp, want: want, done: done, first: &first}
	})}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		b.Fatalf("consumed %d of %d records in 120s", n.Load(), want)
	}
	end := time.Now()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return end.Sub(t0), end.Sub(time.Unix(0, first.Load())), sp.Load()
}

// BenchmarkIngestOTLP: 200 OTLP/protobuf messages of 100 LLM spans (about
// 12 attributes each, plus 2 non-LLM spans), published first over 6
// partitions, then consumed through kfake, decoded and acked by a fresh
// group per iteration. Reports spans/s from Run to the last ack (group join
// included) and from the first batch to the last ack (steady state).
func BenchmarkIngestOTLP(b *testing.B) {
	const msgs, spansPer = 200, 100
	k := testharness.StartKafka(b)
	k.CreateTopic(b, DefaultSpanTopic, 6, nil)
	recs := make([]*kgo.Record, msgs)
	var bytes int
	for i := range recs {
		v := otlpProto(b, buildTraces(i%6, i/6, spansPer))
		bytes += len(v)
		recs[i] = &kgo.Record{Topic: DefaultSpanTopic, Key: []byte(fmt.Sprint(i)), Value: v}
	}
	k.Produce(b, recs...)
	b.ResetTimer()
	var total, steady time.Duration
	for i := 0; b.Loop(); i++ {
		tt, st, spans := consumeAll(b, k, fmt.Sprintf("bench-otlp-%d", i), msgs, CorrectionTopics())
		if spans != msgs*spansPer {
			b.Fatalf("delivered %d spans, want %d", spans, msgs*spansPer)
		}
		total += tt
		steady += st
	}
	n := float64(b.N) * msgs * spansPer
	b.ReportMetric(n/total.Seconds(), "spans/s")
	b.ReportMetric(n/steady.Seconds(), "steady-spans/s")
	b.ReportMetric(float64(bytes)/msgs, "bytes/msg")
}

// BenchmarkIngestPerRecord: 20,000 tiny records through kfake with a
// trivial decoder: the consumer's cost per Kafka record (fetch, dispatch,
// batch, ack, commit) without decoding.
func BenchmarkIngestPerRecord(b *testing.B) {
	const n = 20_000
	k := testharness.StartKafka(b)
	k.CreateTopic(b, "tiny", 6, nil)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "tiny", Key: []byte(fmt.Sprint(i)), Value: []byte("ok:x")}
	}
	k.Produce(b, recs...)
	b.ResetTimer()
	var total, steady time.Duration
	for i := 0; b.Loop(); i++ {
		tt, st, _ := consumeAll(b, k, fmt.Sprintf("bench-tiny-%d", i), n,
			SpanTopics(), CorrectionTopics(), TopicDecoder("tiny", testDecoder))
		total += tt
		steady += st
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*n), "ns/record")
	b.ReportMetric(float64(steady.Nanoseconds())/float64(b.N*n), "steady-ns/record")
}

// BenchmarkBatchPath is ingest's own in-process work per record, without
// Kafka: build a batch of 100 records (decode with a no-op decoder,
// register with the tracker), ack it, advance the commit offset.
// The decoder does nothing, so this is the consumer's overhead alone.
func BenchmarkBatchPath(b *testing.B) {
	p := trackerPartition()
	p.decoder = DecoderFunc(func(int64, []Header, []byte, *Record) error { return nil })
	recs := make([]*kgo.Record, 100)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "t", Offset: int64(i), Value: []byte("ok:x")}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j, r := range recs {
			r.Offset = int64(i*100 + j)
		}
		bt := p.build(chunk{recs: recs, bytes: 400})
		bt.Ack()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/record")
}

// BenchmarkSpanDecoder decodes and validates the messages of
// BenchmarkIngestOTLP without Kafka: the ceiling the ingest throughput is
// compared with.
func BenchmarkSpanDecoder(b *testing.B) {
	const spansPer = 100
	d := &SpanDecoder{Encoding: EncodingAuto, Names: DefaultConfig().Attributes, Limits: DefaultConfig().Limits}
	msgs := make([]*kgo.Record, 6)
	for i := range msgs {
		msgs[i] = &kgo.Record{Value: otlpProto(b, buildTraces(i, i, spansPer))}
	}
	b.ReportAllocs()
	var spans int
	for i := 0; b.Loop(); i++ {
		var out Record
		if err := d.Decode(0, nil, msgs[i%len(msgs)].Value, &out); err != nil {
			b.Fatal(err)
		}
		spans += len(out.Spans)
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}
