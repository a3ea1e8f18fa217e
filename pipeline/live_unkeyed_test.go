package pipeline_test

import (
	"os"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestLiveUnkeyedSpansAreLoud runs a pipeline on the broker and sends it
// spans captured from OpenInference (decoded as LLM calls) and spans of a
// GenAI instrumentation scope that look like LLM calls but carry no model:
// fusebox_spans_unkeyed_total{scope, reason} counts the latter and a WARN
// names their scope, reason and what fusebox needs. Before issue 23 the
// OpenInference spans were all skipped and nothing but
// fusebox_spans_skipped_total moved.
func TestLiveUnkeyedSpansAreLoud(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := liveConfig(t, liveOpts{brokers: k.Brokers, suffix: ".unkeyed"})
	logs := &logBuffer{}
	run := startRunWith(t, pipeline.Options{Config: cfg, InsecureUnsigned: true, Logger: logs.logger()})
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	oi, err := os.ReadFile("../schemas/testdata/instrumentation/openinference.otlp_proto")
	if err != nil {
		t.Fatal(err)
	}
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	const scope = "opentelemetry.instrumentation.openai_v2"
	ss.Scope().SetName(scope)
	now := time.Now().UnixNano()
	for i := range 3 {
		sp := ss.Spans().AppendEmpty()
		sp.SetSpanID(pcommon.SpanID{byte(i + 1)})
		sp.SetStartTimestamp(pcommon.Timestamp(now - 1e9))
		sp.SetEndTimestamp(pcommon.Timestamp(now))
		sp.Attributes().PutStr("gen_ai.operation.name", "chat")
	}
	noModel, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	produceSync(t, cl, &kgo.Record{Topic: "otlp_spans", Value: oi}, &kgo.Record{Topic: "otlp_spans", Value: noModel})

	metric := func(name string, labels ...string) float64 {
		var s observe.Snapshot
		run.p.Metrics().Collect(&s)
		for _, x := range s.Extra {
			if x.Name != name {
				continue
			}
			ok := true
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range x.Labels {
					found = found || l.Name == labels[i] && l.Value == labels[i+1]
				}
				ok = ok && found
			}
			if ok {
				return x.Value
			}
		}
		return 0
	}
	testharness.Eventually(t, 30*time.Second, "the unkeyed spans counted", func() bool {
		return metric("fusebox_spans_unkeyed_total", "scope", scope, "reason", "no_model") == 3
	})
	if n := metric("fusebox_spans_decoded_total"); n != 4 {
		t.Errorf("fusebox_spans_decoded_total %v, want the 4 OpenInference calls", n)
	}
	if n := logs.count(`"level":"WARN"`, "cannot be keyed", scope, `"reason":"no_model"`, "gen_ai.request.model"); n != 1 {
		t.Errorf("%d WARN lines for the unkeyed spans, want 1:\n%s", n, logs.String())
	}
	run.stop(t)
}
