package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLivePartialRecords sends, while two tenants' valid traffic flows, an
// OTLP message (as the Collector's pdata writes it) of four spans of
// tenant initech: two valid, one whose tenant attribute is a bool, one
// whose model is not valid UTF-8; a correction without schema_version (as
// apps leave it out) and one of an unsupported version. Only the two bad
// spans may be rejected — the DLQ record naming them — the valid spans of
// the message must be judged, the versionless correction read as version
// 1, the version-2 one dead-lettered with its reason. Before the fix the
// one bad attribute dead-lettered the whole message, and the correction
// without a version was refused.
func TestLivePartialRecords(t *testing.T) {
	k, cfg, log, run := startLive(t, liveOpts{suffix: ".partial"})
	healthy := []string{"acme", "globex"}
	pub := startPublisher(t, k, healthy)
	log.waitVerdicts(t, time.Now(), 30*time.Second, healthy...)

	now := time.Now()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "chat")
	ss := rs.ScopeSpans().AppendEmpty()
	for i := 0; i < 4; i++ {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID([16]byte{0xAB, byte(i), 2}))
		sp.SetSpanID(pcommon.SpanID([8]byte{0xAB, byte(i), 2}))
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-300 * time.Millisecond)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		sp.Attributes().PutStr("gen_ai.request.model", "gpt-4o")
		sp.Attributes().PutStr("tenant.id", "initech")
		switch i {
		case 1:
			sp.Attributes().PutBool("tenant.id", true)
		case 2:
			sp.Attributes().PutStr("gen_ai.request.model", "gpt-\xff\xfe")
		}
	}
	var pm ptrace.ProtoMarshaler
	msg, err := pm.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	ts := now.UTC().Format(time.RFC3339Nano)
	noVersion := `{"event_id":"c-nov","time":"` + ts + `","tenant":"acme","session_id":"s1","kind":"reject"}`
	v2 := `{"schema_version":2,"event_id":"c-v2","time":"` + ts + `","tenant":"acme","session_id":"s1","kind":"reject"}`
	corr0 := run.p.Source().Stats().Corrections
	produceSync(t, pub.cl,
		&kgo.Record{Topic: "otlp_spans", Partition: 0, Value: msg},
		&kgo.Record{Topic: "fusebox.corrections", Partition: 0, Value: []byte(noVersion)},
		&kgo.Record{Topic: "fusebox.corrections", Partition: 0, Value: []byte(v2)},
	)

	log.waitAnyVerdict(t, now, 15*time.Second, "initech")
	log.waitVerdicts(t, now.Add(2*time.Second), 15*time.Second, healthy...)
	dlq := k.ReadAll(t, cfg.Topics.DLQ, 2, 10*time.Second)
	var partial, version bool
	for _, r := range dlq {
		switch header(r, ingest.HeaderSourceTopic) {
		case "otlp_spans":
			var named []string
			for _, h := range r.Headers {
				if h.Key == ingest.HeaderInvalidSpan {
					named = append(named, string(h.Value))
				}
			}
			partial = header(r, ingest.HeaderPartial) == "true" && header(r, ingest.HeaderInvalidSpans) == "2/4" && len(named) == 2 &&
				strings.HasPrefix(named[0], "1 resource_spans[0].scope_spans[0].spans[1].attributes[tenant.id]: want a string, got bool") &&
				strings.HasPrefix(named[1], "2 resource_spans[0].scope_spans[0].spans[2].attributes[gen_ai.request.model]: string is not valid UTF-8")
			if !partial {
				t.Errorf("span DLQ record: partial=%q invalid_spans=%q named %q", header(r, ingest.HeaderPartial), header(r, ingest.HeaderInvalidSpans), named)
			}
		case "fusebox.corrections":
			version = strings.Contains(header(r, ingest.HeaderError), "unsupported version 2") && header(r, ingest.HeaderErrorField) == "schema_version"
			if !version {
				t.Errorf("correction DLQ record: error %q field %q", header(r, ingest.HeaderError), header(r, ingest.HeaderErrorField))
			}
		}
	}
	if len(dlq) != 2 || !partial || !version {
		t.Errorf("%d DLQ records; partial span record ok: %v; version-2 correction ok: %v", len(dlq), partial, version)
	}
	if got := run.p.Source().Stats().Corrections - corr0; got != 1 {
		t.Errorf("%d corrections decoded, want the one without schema_version", got)
	}
	var initech int64
	log.mu.Lock()
	for _, v := range log.verdicts {
		if v.Key.Tenant == "initech" {
			initech = max(initech, v.N)
		}
	}
	log.mu.Unlock()
	if initech != 2 {
		t.Errorf("initech's verdicts counted at most %d spans, want the message's 2 valid ones", initech)
	}
	pub.halt()
	run.stop(t)
}
