package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

// evalSLOs: the corrections SLO, tripping the target on a breach, and the
// rules that make corrections of user_feedback evaluation events.
const evalSLOs = `
evaluations:
  rules:
    - name: user_feedback
      labels: [incorrect]
      score_at_most: 0
breaker:
  k: 2
  n: 4
  rules:
    - processor: corrections
      action: trip
slos:
  - name: corrections
    corrections: {max_rate: 0.06, window: 4m, every: 1m, join_window: 5m, min_responses: 50}
`

// evaluationRecords turns the generator's corrections into what an
// application instrumented with the GenAI conventions sends instead of
// fusebox's correction JSON: gen_ai.evaluation.result events, as OTLP log
// records on otlp_logs (protobuf and JSON in turn) and, for every third
// one with a trace id, as a span event on an evaluator span of the same
// trace on otlp_spans. Each real correction comes with a positive feedback
// and a relevance evaluation that must not count.
func evaluationRecords(t *testing.T, cs []schemas.Correction, seq *int) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	logs := plog.NewLogs()
	var pm plog.ProtoMarshaler
	var jm plog.JSONMarshaler
	var tm ptrace.ProtoMarshaler
	flushLogs := func() {
		if logs.LogRecordCount() == 0 {
			return
		}
		var b []byte
		var err error
		if *seq%2 == 0 {
			b, err = pm.MarshalLogs(logs)
		} else {
			b, err = jm.MarshalLogs(logs)
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: "otlp_logs", Value: b})
		logs = plog.NewLogs()
	}
	put := func(a pcommon.Map, c *schemas.Correction, name, label string, score float64) {
		a.PutStr("gen_ai.evaluation.name", name)
		if label != "" {
			a.PutStr("gen_ai.evaluation.score.label", label)
		} else {
			a.PutDouble("gen_ai.evaluation.score.value", score)
		}
		if c.SessionID != "" {
			a.PutStr("session.id", c.SessionID)
		}
		if c.Model != "" {
			a.PutStr("gen_ai.request.model", c.Model)
			a.PutStr("deployment.variant", c.Variant)
		}
	}
	for i := range cs {
		c := &cs[i]
		*seq++
		if !c.TraceID.IsZero() && *seq%3 == 0 {
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", "feedback-widget")
			sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID(c.TraceID))
			sp.SetSpanID(pcommon.SpanID{byte(*seq), byte(*seq >> 8), 1})
			sp.SetName("record_feedback") // no model: not an LLM call
			sp.SetStartTimestamp(pcommon.Timestamp(c.TimeUnixNano - 1e6))
			sp.SetEndTimestamp(pcommon.Timestamp(c.TimeUnixNano))
			sp.Attributes().PutStr("tenant.id", c.Tenant)
			ev := sp.Events().AppendEmpty()
			ev.SetName(schemas.EvaluationEventName)
			ev.SetTimestamp(pcommon.Timestamp(c.TimeUnixNano))
			put(ev.Attributes(), c, "user_feedback", "incorrect", 0)
			b, err := tm.MarshalTraces(td)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, &kgo.Record{Topic: "otlp_spans", Value: b})
			continue
		}
		rl := logs.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("tenant.id", c.Tenant)
		sl := rl.ScopeLogs().AppendEmpty()
		for j, e := range []struct {
			name, label string
			score       float64
		}{{"user_feedback", "", -1}, {"user_feedback", "correct", 0}, {"relevance", "", -1}} {
			if j == 0 && *seq%2 == 0 {
				e.label = "incorrect" // by label half the time, by score the other half
			}
			lr := sl.LogRecords().AppendEmpty()
			lr.SetEventName(schemas.EvaluationEventName)
			lr.SetTimestamp(pcommon.Timestamp(c.TimeUnixNano))
			lr.SetTraceID(pcommon.TraceID(c.TraceID))
			put(lr.Attributes(), c, e.name, e.label, e.score)
		}
		if logs.LogRecordCount() >= 30 {
			flushLogs()
		}
	}
	flushLogs()
	return recs
}

// publishWithEvaluations is publish with the corrections sent only as
// evaluation events; bad adds, every 20 s of event time, a log message
// whose evaluation has an unusable score.
func publishWithEvaluations(t *testing.T, k *testharness.Kafka, g *traffic.Generator, d time.Duration, seq *int, bad bool) int {
	t.Helper()
	cl := k.Client(t, kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(10*time.Millisecond))
	var recs []*kgo.Record
	var pending []schemas.Span
	names := schemas.DefaultAttributeNames()
	nBad := 0
	for until := g.Offset() + d; g.Offset() < until; {
		b := g.Next(time.Second)
		pending = append(append(pending, b.Spans...), b.Other...)
		for len(pending) >= 100 {
			recs = append(recs, &kgo.Record{Topic: "otlp_spans", Value: schemas.EncodeOTLPProto(nil, pending[:100], names)})
			pending = pending[100:]
		}
		recs = append(recs, evaluationRecords(t, b.Corrections, seq)...)
		if bad && int(g.Offset()/time.Second)%20 == 0 {
			ld := plog.NewLogs()
			lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
			lr.SetEventName(schemas.EvaluationEventName)
			lr.Attributes().PutStr("gen_ai.evaluation.name", "user_feedback")
			lr.Attributes().PutStr("gen_ai.evaluation.score.value", "very bad")
			var pm plog.ProtoMarshaler
			v, _ := pm.MarshalLogs(ld)
			recs = append(recs, &kgo.Record{Topic: "otlp_logs", Value: v})
			nBad++
		}
	}
	if len(pending) > 0 {
		recs = append(recs, &kgo.Record{Topic: "otlp_spans", Value: schemas.EncodeOTLPProto(nil, pending, names)})
	}
	// Stamped with the simulated producer's clock: event time is judged
	// against the record timestamp (time.max_future_skew), and this
	// traffic's event times are ahead of the wall clock.
	for _, r := range recs {
		r.Timestamp = g.Now()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return nBad
}

// TestCorrectionsFromEvaluationEventsTrip runs the pipeline on kfake with
// corrections that arrive ONLY as gen_ai.evaluation.result events (log
// records and span events; no correction JSON at all). Normal traffic
// flows; a correction spike on one target trips it through the corrections
// SLO; the other keys stay healthy; evaluation messages with an unusable
// score go to the DLQ while the verdicts keep coming.
func TestCorrectionsFromEvaluationEventsTrip(t *testing.T) {
	k := testharness.StartKafka(t)
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "out.jsonl")
	y := "kafka:\n  brokers: [" + strings.Join(k.Brokers, ", ") + "]\n" +
		"time: {idle_source_timeout: 1s, checkpoint_every: 500ms, allowed_lateness: 5s}\n" +
		"topics: {keyed_partitions: 2}\n" +
		"signing: {insecure_unsigned: true}\n" +
		"sinks: {jsonl: {path: " + jsonl + "}}\n" + evalSLOs
	cfg, err := config.Parse("eval.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}

	sc := traffic.Demo()
	sc.Rate = 40
	sc.CorrectionRate = 0.02
	target := traffic.Target{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: "baseline"}
	sc.Incidents = []traffic.Incident{{Name: "corrections", Kind: traffic.CorrectionSpike, Start: 8 * time.Minute, End: 16 * time.Minute,
		Target: target, Magnitude: 0.4}}
	start := time.Unix(1_800_000_000, 0)
	g, err := traffic.New(sc, start)
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	// Before the spike, as a backlog; then the pipeline runs while the
	// rest (the spike, and the bad evaluation messages) is published.
	nBad := publishWithEvaluations(t, k, g, 6*time.Minute, &seq, false)

	run := startRunWith(t, pipeline.Options{Config: cfg, Logger: testLogger(t)})
	p := run.p
	for range 4 {
		nBad += publishWithEvaluations(t, k, g, 4*time.Minute, &seq, true)
		time.Sleep(300 * time.Millisecond) // traffic in four bursts, not one batch
	}
	end := g.Now()

	want := end.Add(-2 * time.Minute).UnixNano()
	if reached, ok := pollJSONLReaches(t, jsonl, want, 40*time.Second); !ok {
		t.Fatalf("after 40s verdicts reached %v, want %v; keyed %+v, ingest %+v", time.Unix(0, reached), time.Unix(0, want),
			p.Keyed().Stats(), p.Source().Stats())
	}
	run.stop(t)

	vs, cmds := readJSONL(t, jsonl)
	spikeFrom, spikeTo := start.Add(8*time.Minute).UnixNano(), start.Add(16*time.Minute).UnixNano()
	var breaches, okOnTarget, evaluated int
	keys := map[schemas.Key]bool{}
	for _, v := range vs {
		if v.Processor != "corrections" || v.Metric != "correction_rate" {
			continue
		}
		keys[v.Key] = true
		onTarget := v.Key.Tenant == target.Tenant && v.Key.Service == target.Service && v.Key.Model == target.Model && v.Key.Variant == target.Variant
		if v.Status != schemas.StatusInsufficientData {
			evaluated++
		}
		switch {
		case v.Status == schemas.StatusBreach && !onTarget:
			t.Errorf("corrections breach off the spike's target: %+v", v)
		case v.Status == schemas.StatusBreach:
			if v.WindowEndUnixNano <= spikeFrom || v.WindowStartUnixNano >= spikeTo+int64(5*time.Minute) {
				t.Errorf("breach outside the spike: window %v..%v", time.Unix(0, v.WindowStartUnixNano), time.Unix(0, v.WindowEndUnixNano))
			}
			breaches++
		case onTarget && v.Status == schemas.StatusOK && v.WindowEndUnixNano <= spikeFrom:
			okOnTarget++
		}
	}
	if breaches == 0 || okOnTarget == 0 || evaluated < 50 || len(keys) < 10 {
		t.Fatalf("corrections verdicts: %d breaches on the target, %d ok before the spike, %d evaluated over %d keys",
			breaches, okOnTarget, evaluated, len(keys))
	}
	trips := 0
	for _, c := range cmds {
		if c.Action == schemas.ActionTrip && c.State == schemas.StateOpen {
			if c.Target.Tenant != target.Tenant || c.Target.Model != target.Model || c.Target.Variant != target.Variant {
				t.Errorf("trip of another target: %+v", c.Target)
			}
			trips++
		}
	}
	if trips == 0 {
		t.Fatalf("no trip among %d commands", len(cmds))
	}
	dlq := k.ReadAll(t, "fusebox.dlq", nBad, 20*time.Second)
	if len(dlq) != nBad || nBad == 0 {
		t.Fatalf("%d DLQ records, want the %d bad evaluation messages", len(dlq), nBad)
	}
	for _, d := range dlq {
		if d.Topic != "fusebox.dlq" || !strings.Contains(string(headerOf(d, "fusebox.error")), "gen_ai.evaluation.score.value") {
			t.Fatalf("DLQ record %q: %s", d.Value, headerOf(d, "fusebox.error"))
		}
	}
	t.Logf("%d corrections verdicts over %d keys, %d breaches, %d trips, %d bad evaluation messages dead-lettered",
		evaluated, len(keys), breaches, trips, nBad)
	_ = os.Remove(jsonl)
}

func headerOf(r *kgo.Record, key string) []byte {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}
