package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// lockedBuffer is a log destination safe for the consumer's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the JSON log lines whose msg starts with prefix.
func (l *lockedBuffer) lines(t *testing.T, prefix string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var m map[string]any
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// unkeyedTraces builds a message with n spans of scope that look like LLM
// calls but have no model (a failed call instrumented before the request
// was built, as some libraries do), one OpenInference CHAIN span, and one
// HTTP client span that does not look like an LLM call at all.
func unkeyedTraces(scope string, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scope)
	for i := range n {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, byte(i)})
		sp.SetSpanID(pcommon.SpanID{2, byte(i)})
		sp.SetStartTimestamp(pcommon.Timestamp(baseNano))
		sp.SetEndTimestamp(pcommon.Timestamp(baseNano + 1e9))
		sp.Attributes().PutStr("gen_ai.operation.name", "chat")
		sp.Attributes().PutStr("gen_ai.provider.name", "openai")
		sp.Attributes().PutInt("gen_ai.request.max_tokens", 32)
		sp.Status().SetCode(ptrace.StatusCodeError)
	}
	oi := rs.ScopeSpans().AppendEmpty()
	oi.Scope().SetName("openinference.instrumentation.langchain")
	chain := oi.Spans().AppendEmpty()
	chain.SetStartTimestamp(pcommon.Timestamp(baseNano))
	chain.SetEndTimestamp(pcommon.Timestamp(baseNano + 1e9))
	chain.Attributes().PutStr("openinference.span.kind", "CHAIN")
	chain.Attributes().PutStr("input.value", "never read")
	http := rs.ScopeSpans().AppendEmpty()
	http.Scope().SetName("opentelemetry.instrumentation.httpx")
	h := http.Spans().AppendEmpty()
	h.SetStartTimestamp(pcommon.Timestamp(baseNano))
	h.SetEndTimestamp(pcommon.Timestamp(baseNano + 1e9))
	h.Attributes().PutStr("http.method", "POST")
	return td
}

// TestUnkeyedSpansCountedAndLogged runs spans captured from OpenInference
// and spans that look like LLM calls but cannot be keyed through the
// consumer on the broker: the OpenInference calls are delivered as spans;
// the unkeyed ones are counted by scope and reason (Stats.Unkeyed), the
// first of each (scope, reason) is logged once (WARN for no_model, naming
// the scope, the attributes and what fusebox needs; INFO for OpenInference
// chains), later ones as counts per interval; the HTTP span is only
// skipped. Past schemas.MaxUnkeyedScopes scopes the rest count as "other".
// On main before issue 23 the OpenInference message gave no span and the
// unkeyed spans no count and no log line.
func TestUnkeyedSpansCountedAndLogged(t *testing.T) {
	k := testharness.StartKafka(t)
	k.CreateTopic(t, DefaultSpanTopic, 1, nil)
	k.CreateTopic(t, DefaultDLQTopic, 1, nil)
	oi, err := os.ReadFile("../schemas/testdata/instrumentation/openinference.otlp_proto")
	if err != nil {
		t.Fatal(err)
	}
	const v2 = "opentelemetry.instrumentation.openai_v2"
	msgs := []kafka.Message{
		msg(0, "oi", oi),
		msg(0, "u1", otlpProto(t, unkeyedTraces(v2, 3))),
		msg(0, "u2", otlpJSON(t, unkeyedTraces(v2, 2))),
	}
	// Forty more scopes, one LLM-looking span each.
	wide := ptrace.NewTraces()
	for i := range 40 {
		ss := wide.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
		ss.Scope().SetName(fmt.Sprintf("llm-lib-%02d", i))
		sp := ss.Spans().AppendEmpty()
		sp.SetStartTimestamp(pcommon.Timestamp(baseNano))
		sp.SetEndTimestamp(pcommon.Timestamp(baseNano + 1))
	}
	msgs = append(msgs, msg(0, "wide", otlpProto(t, wide)))
	newPublisher(t, k, DefaultSpanTopic).publish(t, msgs...)

	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := &sink{}
	r := start(t, k, "g-unkeyed", Handlers(s.factory), Logger(log), RejectLogEvery(time.Nanosecond))
	testharness.Eventually(t, 30*time.Second, "every message delivered", func() bool { return s.count() == len(msgs) })

	recs := s.snapshot()
	if n := len(recs[0].Spans); n != 4 {
		t.Fatalf("OpenInference capture: %d spans, want its 4 calls", n)
	}
	for _, sp := range recs[0].Spans {
		if sp.Key.Model == "" || sp.Scope != "openinference.instrumentation.openai" {
			t.Errorf("OpenInference span %+v", sp)
		}
	}
	st := r.c.Stats()
	counts := map[string]int64{}
	scopes := map[string]bool{}
	for _, u := range st.Unkeyed {
		counts[u.Scope+"/"+u.Reason] += u.Count
		scopes[u.Scope] = true
	}
	if counts[v2+"/no_model"] != 5 || counts["openinference.instrumentation.langchain/not_llm_kind"] != 2 {
		t.Errorf("unkeyed %+v, want 5 no_model of %s and 2 not_llm_kind of OpenInference", st.Unkeyed, v2)
	}
	if counts["opentelemetry.instrumentation.httpx/no_model"] != 0 {
		t.Errorf("the HTTP span counted as unkeyed: %+v", st.Unkeyed)
	}
	var wideTotal int64
	for key, n := range counts {
		if strings.HasPrefix(key, "llm-lib-") || strings.HasPrefix(key, schemas.UnkeyedOtherScope+"/") {
			wideTotal += n
		}
	}
	if wideTotal != 40 || len(scopes) > schemas.MaxUnkeyedScopes+1 || counts[schemas.UnkeyedOtherScope+"/no_model"] == 0 {
		t.Errorf("40 scopes: %d spans counted under %d scopes (other: %d), want 40 under at most %d", wideTotal, len(scopes),
			counts[schemas.UnkeyedOtherScope+"/no_model"], schemas.MaxUnkeyedScopes+1)
	}
	// 5 + 2 (+ the HTTP spans) + 40 skipped, plus none of the OpenInference capture.
	if st.SkippedNoModel != 5+2+2+40 {
		t.Errorf("skipped %d, want %d", st.SkippedNoModel, 5+2+2+40)
	}

	first := logs.lines(t, "ingest: spans look like LLM calls but cannot be keyed")
	byKey := map[string][]map[string]any{}
	for _, l := range first {
		byKey[fmt.Sprint(l["scope"], "/", l["reason"])] = append(byKey[fmt.Sprint(l["scope"], "/", l["reason"])], l)
	}
	v2Lines := byKey[v2+"/no_model"]
	if len(v2Lines) != 1 {
		t.Fatalf("%d first lines for %s/no_model, want 1: %v", len(v2Lines), v2, first)
	}
	l := v2Lines[0]
	if l["level"] != "WARN" || l["spans"] != float64(3) || !strings.Contains(fmt.Sprint(l["attributes"]), "gen_ai.operation.name") ||
		!strings.Contains(fmt.Sprint(l["attributes"]), "gen_ai.request.max_tokens") || !strings.Contains(fmt.Sprint(l["needs"]), "gen_ai.request.model") {
		t.Errorf("first line %v", l)
	}
	if c := byKey["openinference.instrumentation.langchain/not_llm_kind"]; len(c) != 1 || c[0]["level"] != "INFO" ||
		!strings.Contains(fmt.Sprint(c[0]["attributes"]), "openinference.span.kind=CHAIN") {
		t.Errorf("chain lines %v", c)
	}
	if h := byKey["opentelemetry.instrumentation.httpx/no_model"]; len(h) != 0 {
		t.Errorf("the HTTP span was logged: %v", h)
	}
	// The second message's spans are counted, not logged one by one.
	var still []map[string]any
	for _, l := range logs.lines(t, "ingest: spans still unkeyed") {
		if l["scope"] == v2 {
			still = append(still, l)
		}
	}
	if len(still) != 1 || still[0]["count"] != float64(2) || still[0]["total"] != float64(5) || still[0]["level"] != "WARN" {
		t.Errorf("interval lines for %s: %v, want one with count 2, total 5", v2, still)
	}
	if strings.Contains(logs.b.String(), "never read") {
		t.Error("content reached the log")
	}
}
