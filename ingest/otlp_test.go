package ingest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The OTLP messages of these tests are built with the Collector's pdata and
// its marshalers, as a team's exporter would write them, not with fusebox's
// own encoders.

const baseNano = int64(1_760_000_000_000_000_000)

// genSpan describes span i of message (part, seq): every field derives from
// the three numbers, so the expected Span can be rebuilt from them.
type genSpan struct{ part, seq, i int }

func (g genSpan) traceID() [16]byte {
	return [16]byte{byte(g.part + 1), byte(g.seq), byte(g.i), 0xAA, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
}
func (g genSpan) spanID() [8]byte {
	return [8]byte{byte(g.part + 1), byte(g.seq), byte(g.i), 0xBB, 1, 2, 3, 4}
}
func (g genSpan) start() int64    { return baseNano + int64(g.seq)*1e9 + int64(g.i)*1e6 }
func (g genSpan) durNano() int64  { return int64(800+10*g.i+g.seq) * 1e6 }
func (g genSpan) service() string { return fmt.Sprintf("svc-%d", g.i%2) }
func (g genSpan) variant() string {
	if g.i%3 == 0 {
		return "canary"
	}
	return "baseline"
}
func (g genSpan) inTokens() int64     { return int64(100 + g.i) }
func (g genSpan) outTokens() int64    { return int64(20 + g.seq%7 + g.i) }
func (g genSpan) isError() bool       { return g.i%5 == 4 }
func (g genSpan) confidence() float64 { return 0.5 + float64(g.i%50)/100 }

// expected is the Span the decoders must return for g.
func (g genSpan) expected() schemas.Span {
	s := schemas.Span{
		TraceID: g.traceID(), SpanID: g.spanID(),
		StartUnixNano: g.start(), EndUnixNano: g.start() + g.durNano(),
		TTFTMs: 250, InputTokens: g.inTokens(), OutputTokens: g.outTokens(),
		FinishReason: "stop",
		Key:          schemas.Key{Tenant: fmt.Sprintf("tenant-%d", g.part), Service: g.service(), Model: "gpt-x", Variant: g.variant()},
		Operation:    "chat", Provider: "openai", ResponseModel: "gpt-x-2025-01",
		Route: "chat", SessionID: fmt.Sprintf("sess-%d-%d", g.part, g.seq), Scope: "fusebox-test",
		Confidence: g.confidence(), Alignment: 0.75,
		Has: schemas.HasTTFT | schemas.HasInputTokens | schemas.HasOutputTokens | schemas.HasConfidence | schemas.HasAlignment,
	}
	if g.i%4 == 1 {
		s.Route = "/v1/chat/completions"
	}
	if g.isError() {
		s.Error, s.ErrorType = true, "timeout"
		s.FinishReason = "error"
	}
	s.Derive()
	return s
}

// buildTraces makes message (part, seq): two resources (services), each
// with LLM spans and one plain HTTP span that is not an LLM call.
func buildTraces(part, seq, llmSpans int) ptrace.Traces {
	td := ptrace.NewTraces()
	for svc := 0; svc < 2; svc++ {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", svc))
		rs.Resource().Attributes().PutStr("tenant.id", fmt.Sprintf("tenant-%d", part))
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("fusebox-test")
		for i := svc; i < llmSpans; i += 2 {
			g := genSpan{part, seq, i}
			sp := ss.Spans().AppendEmpty()
			sp.SetName("chat gpt-x")
			sp.SetTraceID(pcommon.TraceID(g.traceID()))
			sp.SetSpanID(pcommon.SpanID(g.spanID()))
			sp.SetStartTimestamp(pcommon.Timestamp(g.start()))
			sp.SetEndTimestamp(pcommon.Timestamp(g.start() + g.durNano()))
			a := sp.Attributes()
			a.PutStr("gen_ai.operation.name", "chat")
			a.PutStr("gen_ai.provider.name", "openai")
			a.PutStr("gen_ai.request.model", "gpt-x")
			a.PutStr("gen_ai.response.model", "gpt-x-2025-01")
			a.PutInt("gen_ai.usage.input_tokens", g.inTokens())
			a.PutInt("gen_ai.usage.output_tokens", g.outTokens())
			fr := a.PutEmptySlice("gen_ai.response.finish_reasons")
			if g.isError() {
				fr.AppendEmpty().SetStr("error")
				a.PutStr("error.type", "timeout")
				sp.Status().SetCode(ptrace.StatusCodeError)
			} else {
				fr.AppendEmpty().SetStr("stop")
			}
			a.PutDouble("gen_ai.response.time_to_first_chunk", 0.25)
			a.PutStr("deployment.variant", g.variant())
			a.PutDouble("llm.response.confidence", g.confidence())
			a.PutDouble("llm.alignment.score", 0.75)
			a.PutStr("session.id", fmt.Sprintf("sess-%d-%d", part, seq))
			if i%4 == 1 {
				a.PutStr("http.route", "/v1/chat/completions")
			}
		}
		plain := ss.Spans().AppendEmpty()
		plain.SetName("GET /health")
		plain.SetTraceID(pcommon.TraceID([16]byte{9, 9, 9}))
		plain.SetSpanID(pcommon.SpanID([8]byte{9, 9}))
		plain.SetStartTimestamp(pcommon.Timestamp(baseNano))
		plain.SetEndTimestamp(pcommon.Timestamp(baseNano + 1e6))
		plain.Attributes().PutStr("http.route", "/health")
	}
	return td
}

func otlpProto(t testing.TB, td ptrace.Traces) []byte {
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func otlpJSON(t testing.TB, td ptrace.Traces) []byte {
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spanKey identifies a generated span in the decoded output.
func spanKey(s *schemas.Span) [3]int {
	return [3]int{int(s.TraceID[0]) - 1, int(s.TraceID[1]), int(s.TraceID[2])}
}

func sameFloat(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// diffSpan names the first field in which got differs from want.
func diffSpan(got, want *schemas.Span) string {
	floats := []struct {
		name string
		g, w float64
	}{{"DurationMs", got.DurationMs, want.DurationMs}, {"TTFTMs", got.TTFTMs, want.TTFTMs}, {"TPOTMs", got.TPOTMs, want.TPOTMs},
		{"Confidence", got.Confidence, want.Confidence}, {"Alignment", got.Alignment, want.Alignment}}
	for _, f := range floats {
		if !sameFloat(f.g, f.w) {
			return fmt.Sprintf("%s = %v, want %v", f.name, f.g, f.w)
		}
	}
	g, w := *got, *want
	g.DurationMs, g.TTFTMs, g.TPOTMs, g.Confidence, g.Alignment = 0, 0, 0, 0, 0
	w.DurationMs, w.TTFTMs, w.TPOTMs, w.Confidence, w.Alignment = 0, 0, 0, 0, 0
	if g != w {
		return fmt.Sprintf("\n got %+v\nwant %+v", g, w)
	}
	return ""
}

// TestOTLPProtoAndJSON publishes OTLP protobuf and JSON messages with
// kafka-go over three partitions of otlp_spans and reads them through
// ingest with the encoding sniffed: every LLM span arrives with every
// mapped field right, the non-LLM spans are counted as skipped, and each
// partition's messages arrive in the order they were published.
func TestOTLPProtoAndJSON(t *testing.T) {
	k := testharness.StartKafka(t)
	k.CreateTopic(t, DefaultSpanTopic, 3, nil)
	k.CreateTopic(t, DefaultDLQTopic, 1, nil)
	pub := newPublisher(t, k, DefaultSpanTopic)
	const perPart, llmSpans = 8, 10
	var msgs []kafka.Message
	for seq := 0; seq < perPart; seq++ {
		for part := 0; part < 3; part++ {
			td := buildTraces(part, seq, llmSpans)
			v := otlpProto(t, td)
			if (seq+part)%2 == 1 {
				v = otlpJSON(t, td)
			}
			msgs = append(msgs, msg(part, fmt.Sprintf("m%d", seq), v))
		}
	}
	// A message with no LLM span at all still flows, so that its offset
	// advances: delivered with no spans and its skipped count.
	noLLM := oneSpan(3, func(_ int, sp ptrace.Span) { sp.Attributes().Remove("gen_ai.request.model") })
	pub.publish(t, append(msgs, msg(2, "no-llm", otlpProto(t, noLLM)))...)

	s := &sink{}
	r := start(t, k, "g-otlp", Handlers(s.factory))
	testharness.Eventually(t, 30*time.Second, "every message delivered", func() bool { return s.count() == len(msgs)+1 })

	seen := map[[3]int]bool{}
	lastSeq := map[int32]int{0: -1, 1: -1, 2: -1}
	for _, rec := range s.snapshot() {
		if string(rec.Key) == "2/no-llm" {
			if len(rec.Spans) != 0 || rec.Stats.SpansSeen != 3 || rec.Stats.SkippedNoModel != 3 {
				t.Errorf("message without LLM spans: %d spans, stats %+v; want 0 spans, 3 seen, 3 skipped", len(rec.Spans), rec.Stats)
			}
			continue
		}
		if rec.Stats.SpansSeen != llmSpans+2 || rec.Stats.SkippedNoModel != 2 {
			t.Errorf("%d/%d: stats %+v, want %d seen and 2 skipped", rec.Partition, rec.Offset, rec.Stats, llmSpans+2)
		}
		if len(rec.Spans) != llmSpans {
			t.Fatalf("%d/%d: %d spans, want %d", rec.Partition, rec.Offset, len(rec.Spans), llmSpans)
		}
		seq := int(rec.Spans[0].TraceID[1])
		if seq <= lastSeq[rec.Partition] {
			t.Errorf("partition %d: message %d arrived after message %d", rec.Partition, seq, lastSeq[rec.Partition])
		}
		lastSeq[rec.Partition] = seq
		for i := range rec.Spans {
			sp := &rec.Spans[i]
			key := spanKey(sp)
			if key[0] != int(rec.Partition) || key[1] != seq {
				t.Fatalf("%d/%d: span of message %v in the record of message %d/%d", rec.Partition, rec.Offset, key, rec.Partition, seq)
			}
			want := genSpan{key[0], key[1], key[2]}.expected()
			if d := diffSpan(sp, &want); d != "" {
				t.Fatalf("span %v: %s", key, d)
			}
			if seen[key] {
				t.Fatalf("span %v delivered twice", key)
			}
			seen[key] = true
		}
	}
	if len(seen) != len(msgs)*llmSpans {
		t.Fatalf("%d distinct spans, want %d", len(seen), len(msgs)*llmSpans)
	}
	st := r.c.Stats()
	if st.Spans != int64(len(msgs)*llmSpans) || st.SkippedNoModel != int64(2*len(msgs)+3) || st.RecordsIn[DefaultSpanTopic] != int64(len(msgs)+1) {
		t.Fatalf("stats: %d spans, %d skipped, %d records; want %d, %d, %d",
			st.Spans, st.SkippedNoModel, st.RecordsIn[DefaultSpanTopic], len(msgs)*llmSpans, 2*len(msgs)+3, len(msgs)+1)
	}
	for _, n := range st.DeadLettered {
		if n != 0 {
			t.Fatalf("dead letters from valid input: %v", st.DeadLettered)
		}
	}
}
