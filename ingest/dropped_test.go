package ingest

import (
	"log/slog"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// droppedTraces is a message of 2 s openlit calls whose library timings
// are out of range: a completion chunk event before the start, one after
// the end, gen_ai.server.time_to_first_token 2.0005 s, a negative
// gen_ai.server.time_per_output_token.
func droppedTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("openlit.otel.tracing")
	for i := range 4 {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, byte(i)})
		sp.SetSpanID(pcommon.SpanID{2, byte(i)})
		sp.SetStartTimestamp(pcommon.Timestamp(baseNano))
		sp.SetEndTimestamp(pcommon.Timestamp(baseNano + 2e9))
		a := sp.Attributes()
		a.PutStr("gen_ai.request.model", "gpt-4o")
		a.PutInt("gen_ai.usage.output_tokens", 11)
		a.PutStr("error.type", "timeout")
		switch i {
		case 0, 1:
			ev := sp.Events().AppendEmpty()
			ev.SetName("gen_ai.content.completion.chunk")
			ev.SetTimestamp(pcommon.Timestamp(baseNano + [2]int64{-5e6, 2.5e9}[i]))
		case 2:
			a.PutDouble("gen_ai.server.time_to_first_token", 2.0005)
		case 3:
			a.PutDouble("gen_ai.server.time_to_first_token", 0.5)
			a.PutDouble("gen_ai.server.time_per_output_token", -0.02)
		}
	}
	return td
}

// TestDroppedTimingsCountedAndLogged: spans whose library-form timings
// are out of range are delivered whole (duration, error, tokens), without
// those timings; the consumer counts them by reason (Stats.TimingsDropped)
// and logs the first of each reason once. Before, each such span failed
// Span.Validate (negative TTFT, TTFT longer than the call) and went to the
// DLQ, its error naming gen_ai.response.time_to_first_chunk.
func TestDroppedTimingsCountedAndLogged(t *testing.T) {
	k := testharness.StartKafka(t)
	k.CreateTopic(t, DefaultSpanTopic, 1, nil)
	k.CreateTopic(t, DefaultDLQTopic, 1, nil)
	msgs := []kafka.Message{msg(0, "d1", otlpProto(t, droppedTraces())), msg(0, "d2", otlpJSON(t, droppedTraces()))}
	newPublisher(t, k, DefaultSpanTopic).publish(t, msgs...)

	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := &sink{}
	r := start(t, k, "g-dropped", Handlers(s.factory), Logger(log))
	testharness.Eventually(t, 30*time.Second, "every message delivered", func() bool { return s.count() == len(msgs) })

	for _, rec := range s.snapshot() {
		if len(rec.Spans) != 4 {
			t.Fatalf("record %d: %d spans delivered, want all 4", rec.Offset, len(rec.Spans))
		}
		for i, sp := range rec.Spans {
			if sp.DurationMs != 2000 || !sp.Error || sp.OutputTokens != 11 {
				t.Errorf("span %d: %+v, want its duration, error and tokens", i, sp)
			}
			if wantTTFT := i == 3; (sp.Has&schemas.HasTTFT != 0) != wantTTFT {
				t.Errorf("span %d: TTFT %v (has %v), want one only on the span with a good server TTFT", i, sp.TTFTMs, sp.Has&schemas.HasTTFT != 0)
			}
			if i == 3 && (sp.Has&schemas.HasTPOT == 0 || sp.TPOTMs != 150) {
				t.Errorf("span 3: TPOT %v, want the derived 150 ms/token, not the negative one", sp.TPOTMs)
			}
		}
	}
	st := r.c.Stats()
	want := map[string]int64{DroppedEventBeforeStart: 2, DroppedEventAfterEnd: 2, DroppedServerTTFT: 2, DroppedServerTPOT: 2}
	if len(st.TimingsDropped) != len(want) {
		t.Fatalf("dropped %v, want %v", st.TimingsDropped, want)
	}
	for k, n := range want {
		if st.TimingsDropped[k] != n {
			t.Errorf("dropped %v, want %v", st.TimingsDropped, want)
		}
	}
	if st.InvalidSpans != 0 || st.DeadLettered[KindInvalid] != 0 || st.PartialDeadLettered != 0 {
		t.Errorf("invalid %d, dead-lettered %v, partial %d: want none", st.InvalidSpans, st.DeadLettered, st.PartialDeadLettered)
	}
	lines := logs.lines(t, "ingest: a library's timing out of range")
	reasons := map[any]int{}
	for _, l := range lines {
		reasons[l["reason"]]++
	}
	if len(lines) != 4 || len(reasons) != 4 {
		t.Errorf("%d log lines (%v), want one per reason", len(lines), reasons)
	}
}
