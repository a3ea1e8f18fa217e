package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func feedbackRules() schemas.EvaluationMapping {
	zero := 0.0
	return schemas.EvaluationMapping{Rules: []schemas.EvaluationRule{
		{Name: "user_feedback", Labels: []string{"incorrect"}, ScoreAtMost: &zero, Kind: schemas.KindThumbsDown}}}
}

// evalLogs is one LogsData message as the Collector's kafka exporter writes
// it: an evaluation event per label, a plain log line between them.
func evalLogs(t *testing.T, trace pcommon.TraceID, labels ...string) []byte {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("tenant.id", "acme")
	sl := rl.ScopeLogs().AppendEmpty()
	for i, l := range labels {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetEventName(schemas.EvaluationEventName)
		lr.SetTimestamp(pcommon.Timestamp(time.Date(2025, 10, 9, 8, 0, i, 0, time.UTC).UnixNano()))
		lr.SetTraceID(trace)
		lr.SetSpanID(pcommon.SpanID{byte(i + 1)})
		lr.Attributes().PutStr("gen_ai.evaluation.name", "user_feedback")
		lr.Attributes().PutStr("gen_ai.evaluation.score.label", l)
		sl.LogRecords().AppendEmpty().Body().SetStr("GET /healthz 200")
	}
	var m plog.ProtoMarshaler
	b, err := m.MarshalLogs(ld)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEvaluationEventsBecomeCorrections reads evaluation events from a log
// topic (protobuf and JSON) and from span events on the span topic, while a
// log message with an unusable score goes to the DLQ and the records after
// it keep coming.
func TestEvaluationEventsBecomeCorrections(t *testing.T) {
	k := testharness.StartKafka(t)
	k.CreateTopic(t, DefaultLogTopic, 1, nil)
	k.CreateTopic(t, DefaultSpanTopic, 1, nil)
	k.CreateTopic(t, DefaultDLQTopic, 1, nil)
	trace := pcommon.TraceID{0xab, 1}

	// A log message with a bad score between good ones.
	bad := plog.NewLogs()
	lr := bad.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(schemas.EvaluationEventName)
	lr.Attributes().PutStr("gen_ai.evaluation.name", "user_feedback")
	lr.Attributes().PutStr("gen_ai.evaluation.score.value", "terrible")
	var pm plog.ProtoMarshaler
	badMsg, _ := pm.MarshalLogs(bad)
	// The same bad event beside a good one: the good one's correction is
	// delivered, the record dead-lettered as partial.
	mixed := plog.NewLogs()
	bad.ResourceLogs().CopyTo(mixed.ResourceLogs())
	mixed.ResourceLogs().At(0).Resource().Attributes().PutStr("tenant.id", "acme")
	g := mixed.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	g.SetEventName(schemas.EvaluationEventName)
	g.SetTimestamp(pcommon.Timestamp(time.Date(2025, 10, 9, 8, 2, 0, 0, time.UTC).UnixNano()))
	g.SetTraceID(trace)
	g.Attributes().PutStr("gen_ai.evaluation.name", "user_feedback")
	g.Attributes().PutStr("gen_ai.evaluation.score.label", "incorrect")
	mixedMsg, _ := pm.MarshalLogs(mixed)
	var jm plog.JSONMarshaler
	ld := plog.NewLogs()
	jr := ld.ResourceLogs().AppendEmpty()
	jr.Resource().Attributes().PutStr("tenant.id", "acme")
	j := jr.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	j.Attributes().PutStr("event.name", schemas.EvaluationEventName) // the older form
	j.SetObservedTimestamp(pcommon.Timestamp(time.Date(2025, 10, 9, 8, 1, 0, 0, time.UTC).UnixNano()))
	j.SetTraceID(trace)
	j.Attributes().PutStr("gen_ai.evaluation.name", "user_feedback")
	j.Attributes().PutDouble("gen_ai.evaluation.score.value", -1)
	jsonMsg, _ := jm.MarshalLogs(ld)
	newPublisher(t, k, DefaultLogTopic).publish(t,
		msg(0, "a", evalLogs(t, trace, "incorrect", "correct")), msg(0, "b", badMsg), msg(0, "c", jsonMsg), msg(0, "d", mixedMsg))

	// A span message: an LLM span with a feedback event, and the spans decode as before.
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bot")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{0xcd})
	sp.SetSpanID(pcommon.SpanID{7})
	sp.SetName("chat gpt-4o")
	sp.SetStartTimestamp(pcommon.Timestamp(time.Date(2025, 10, 9, 8, 0, 0, 0, time.UTC).UnixNano()))
	sp.SetEndTimestamp(sp.StartTimestamp() + 1e9)
	sp.Attributes().PutStr("gen_ai.request.model", "gpt-4o")
	sp.Attributes().PutStr("tenant.id", "initech")
	ev := sp.Events().AppendEmpty()
	ev.SetName(schemas.EvaluationEventName)
	ev.Attributes().PutStr("gen_ai.evaluation.name", "user_feedback")
	ev.Attributes().PutStr("gen_ai.evaluation.score.label", "incorrect")
	var tm ptrace.ProtoMarshaler
	spanMsg, _ := tm.MarshalTraces(td)
	newPublisher(t, k, DefaultSpanTopic).publish(t, msg(0, "s", spanMsg))

	s := &sink{}
	start(t, k, "g-eval", CorrectionTopics(), LogTopics(DefaultLogTopic), Evaluations(feedbackRules()), Handlers(s.factory))
	testharness.Eventually(t, 30*time.Second, "the good log messages and the span message delivered", func() bool { return s.count() == 4 })

	var logCorr, spanCorr []schemas.Correction
	spans := 0
	for _, rec := range s.snapshot() {
		if rec.Topic == DefaultLogTopic {
			logCorr = append(logCorr, rec.Corrections...)
		} else {
			spanCorr = append(spanCorr, rec.Corrections...)
			spans += len(rec.Spans)
		}
	}
	if len(logCorr) != 3 || logCorr[0].Tenant != "acme" || logCorr[0].TraceID != schemas.TraceID(trace) ||
		logCorr[0].Kind != schemas.KindThumbsDown || logCorr[1].TimeUnixNano != time.Date(2025, 10, 9, 8, 1, 0, 0, time.UTC).UnixNano() {
		t.Fatalf("log corrections %+v", logCorr)
	}
	if spans != 1 || len(spanCorr) != 1 || spanCorr[0].Tenant != "initech" || spanCorr[0].Model != "gpt-4o" ||
		spanCorr[0].TraceID != (schemas.TraceID{0xcd}) || spanCorr[0].TimeUnixNano != int64(sp.EndTimestamp()) {
		t.Fatalf("span record: %d spans, corrections %+v", spans, spanCorr)
	}
	dead := k.ReadAll(t, DefaultDLQTopic, 2, 20*time.Second)
	if len(dead) != 2 {
		t.Fatalf("DLQ: %d records, want 2", len(dead))
	}
	for i, want := range []struct {
		value   []byte
		partial string
	}{{badMsg, ""}, {mixedMsg, "true"}} {
		d := dead[i]
		if string(d.Value) != string(want.value) || header(d, HeaderErrorKind) != string(KindInvalid) || header(d, HeaderPartial) != want.partial ||
			!strings.Contains(header(d, HeaderError), "gen_ai.evaluation.score.value") {
			t.Errorf("DLQ record %d: partial %q, error %q", i, header(d, HeaderPartial), header(d, HeaderError))
		}
	}
}

func TestLogTopicsNeedRules(t *testing.T) {
	_, err := New(Brokers("127.0.0.1:1"), Group("g"), Handlers((&sink{}).factory), LogTopics("otlp_logs"))
	if err == nil || !strings.Contains(err.Error(), "LogTopics") {
		t.Fatalf("err = %v", err)
	}
	_, err = New(Brokers("127.0.0.1:1"), Group("g"), Handlers((&sink{}).factory), LogTopics("otlp_spans"), Evaluations(feedbackRules()))
	if err == nil || !strings.Contains(err.Error(), "also one of SpanTopics") {
		t.Fatalf("err = %v", err)
	}
}
