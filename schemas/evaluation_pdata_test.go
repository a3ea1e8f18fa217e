package schemas

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The evaluation-event corpora: built with the Collector's pdata, decoded
// by fusebox's readers, and checked field by field against what refEval*
// computes from pdata's own unmarshalling of the same bytes.

var (
	genEvalNames  = []string{"user_feedback", "relevance", "toxicity"}
	genEvalLabels = []string{"correct", "incorrect", "thumbs_down", ""}
)

// putEvalAttrs writes a random evaluation's attributes, in a random order of
// presence, with the types producers use (scores as doubles or ints).
func putEvalAttrs(rng *rand.Rand, a pcommon.Map, n AttributeNames) {
	maybe := func(p int) bool { return rng.IntN(100) < p }
	a.PutStr("gen_ai.evaluation.name", pick(rng, genEvalNames))
	if maybe(70) {
		if maybe(20) {
			a.PutInt("gen_ai.evaluation.score.value", int64(rng.IntN(3))-1)
		} else {
			a.PutDouble("gen_ai.evaluation.score.value", rng.Float64()*2-1)
		}
	}
	if maybe(70) {
		a.PutStr("gen_ai.evaluation.score.label", pick(rng, genEvalLabels))
	}
	if maybe(40) {
		a.PutStr("gen_ai.evaluation.explanation", "the answer cites a retired policy")
	}
	if maybe(50) {
		a.PutStr("gen_ai.response.id", "chatcmpl-"+strconv.Itoa(rng.IntN(1e6)))
	}
	if maybe(20) {
		a.PutStr(n.Tenant, pick(rng, genTenants)) // on the event: wins over the span's
	}
	if maybe(10) {
		a.PutStr("gen_ai.request.model", pick(rng, genModels))
	}
	a.PutStr("evaluator", "thumbs-widget") // not read
}

// genEvalTraces is genPdataTraces with gen_ai.evaluation.result events added
// to some spans (LLM or not), beside the other events those spans carry.
func genEvalTraces(rng *rand.Rand, n AttributeNames) ptrace.Traces {
	td := genPdataTraces(rng, n, pdataCorpusOptions{})
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				for range rng.IntN(3) {
					ev := sp.Events().AppendEmpty()
					ev.SetName(EvaluationEventName)
					if rng.IntN(5) > 0 {
						ev.SetTimestamp(sp.EndTimestamp() + pcommon.Timestamp(rng.Int64N(1e9)))
					}
					putEvalAttrs(rng, ev.Attributes(), n)
				}
			}
		}
	}
	return td
}

// refEvalAttrs reads the evaluation attributes of m as pdata sees them.
func refEvalAttrs(t *testing.T, m pcommon.Map, n AttributeNames) (str map[string]string, score float64, hasScore bool) {
	str = map[string]string{}
	for _, k := range []string{"gen_ai.evaluation.name", "gen_ai.evaluation.score.label", "gen_ai.evaluation.explanation",
		"gen_ai.response.id", n.Tenant, n.Session, n.Variant, "gen_ai.request.model", "gen_ai.response.model", "event.name"} {
		if v, ok := m.Get(k); ok {
			s, p := refStr(v)
			if p.kind != nil {
				t.Fatalf("corpus has an unusable %s", k)
			}
			str[k] = s
		}
	}
	if v, ok := m.Get("gen_ai.evaluation.score.value"); ok {
		f, p := refNumber(v)
		if p.kind != nil {
			t.Fatal("corpus has an unusable score")
		}
		score, hasScore = f, true
	}
	return str, score, hasScore
}

// refEvaluation builds the expected Evaluation: the evaluation's own
// attributes from the event, the context ones from the first list that has
// them non-empty.
func refEvaluation(tid TraceID, sid SpanID, t int64, n AttributeNames, ev map[string]string, score float64, hasScore bool, rest ...map[string]string) Evaluation {
	e := Evaluation{TraceID: tid, SpanID: sid, TimeUnixNano: t, Name: ev["gen_ai.evaluation.name"],
		Label: ev["gen_ai.evaluation.score.label"], Explanation: ev["gen_ai.evaluation.explanation"],
		ResponseID: ev["gen_ai.response.id"], Score: score, HasScore: hasScore}
	ctx := func(k string) string {
		for _, m := range append([]map[string]string{ev}, rest...) {
			if s := m[k]; s != "" {
				return s
			}
		}
		return ""
	}
	e.Tenant, e.SessionID, e.Variant = ctx(n.Tenant), ctx(n.Session), ctx(n.Variant)
	if e.Model = ctx("gen_ai.request.model"); e.Model == "" {
		e.Model = ctx("gen_ai.response.model")
	}
	return e
}

func refSpanEvaluations(t *testing.T, td ptrace.Traces, n AttributeNames) []Evaluation {
	n = n.withDefaults()
	var out []Evaluation
	for _, rs := range td.ResourceSpans().All() {
		res, _, _ := refEvalAttrs(t, rs.Resource().Attributes(), n)
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				span, _, _ := refEvalAttrs(t, sp.Attributes(), n)
				for _, ev := range sp.Events().All() {
					if ev.Name() != EvaluationEventName {
						continue
					}
					ea, score, has := refEvalAttrs(t, ev.Attributes(), n)
					ts := int64(ev.Timestamp())
					if ts == 0 {
						ts = int64(sp.EndTimestamp())
					}
					out = append(out, refEvaluation(TraceID(sp.TraceID()), SpanID(sp.SpanID()), ts, n, ea, score, has, span, res))
				}
			}
		}
	}
	return out
}

func compareEvaluations(t *testing.T, seed uint64, got, want []Evaluation) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("seed %d: %d evaluations, want %d", seed, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if math.Float64bits(g.Score) != math.Float64bits(w.Score) {
			t.Fatalf("seed %d: evaluation %d: score %v, want %v", seed, i, g.Score, w.Score)
		}
		g.Score, w.Score = 0, 0
		if g != w {
			t.Fatalf("seed %d: evaluation %d:\n got  %+v\n want %+v", seed, i, g, w)
		}
	}
}

// TestSpanEvaluationsMatchPdata reads evaluation events on spans, in both
// encodings, against pdata's view of the same messages.
func TestSpanEvaluationsMatchPdata(t *testing.T) {
	var pm ptrace.ProtoMarshaler
	var pu ptrace.ProtoUnmarshaler
	var jm ptrace.JSONMarshaler
	var ju ptrace.JSONUnmarshaler
	names := DefaultAttributeNames()
	total := 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 17))
		td := genEvalTraces(rng, names)
		pb, err := pm.MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		js, err := jm.MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		back, err := pu.UnmarshalTraces(pb)
		if err != nil {
			t.Fatal(err)
		}
		want := refSpanEvaluations(t, back, names)
		got, err := DecodeOTLPSpanEvaluations(pb, names, Limits{}, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		compareEvaluations(t, seed, got, want)
		backJS, err := ju.UnmarshalTraces(js)
		if err != nil {
			t.Fatal(err)
		}
		gotJS, err := DecodeOTLPJSONSpanEvaluations(js, names, Limits{}, nil)
		if err != nil {
			t.Fatalf("seed %d json: %v", seed, err)
		}
		compareEvaluations(t, seed, gotJS, refSpanEvaluations(t, backJS, names))
		total += len(got)
		// The spans of the same message decode as before: the events do
		// not change them (a span rejected for its own attributes, as a
		// TTFT longer than the call, is rejected alone, as the reference
		// decoder says).
		_, _, err = DecodeOTLPProto(pb, names, Limits{}, nil)
		_, _, refErr := refDecode(back, names)
		if fmt.Sprint(err) != fmt.Sprint(refErr) {
			t.Fatalf("seed %d: spans: %v, want %v", seed, err, refErr)
		}
	}
	if total < 500 {
		t.Fatalf("corpus too narrow: %d evaluations", total)
	}
}

// genEvalLogs builds a LogsData as an application's logs exporter writes
// it: evaluation events under event_name (newer SDKs) or the event.name
// attribute (older), other events and plain log lines between them.
func genEvalLogs(rng *rand.Rand, n AttributeNames) plog.Logs {
	ld := plog.NewLogs()
	maybe := func(p int) bool { return rng.IntN(100) < p }
	for range 1 + rng.IntN(3) {
		rl := ld.ResourceLogs().AppendEmpty()
		ra := rl.Resource().Attributes()
		ra.PutStr("service.name", pick(rng, genServices))
		if maybe(60) {
			ra.PutStr(n.Tenant, pick(rng, genTenants))
		}
		if maybe(30) {
			ra.PutStr(n.Variant, pick(rng, genVariants))
		}
		for range 1 + rng.IntN(2) {
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("feedback-service")
			for range rng.IntN(8) {
				lr := sl.LogRecords().AppendEmpty()
				ts := pcommon.Timestamp(1_700_000_000_000_000_000 + rng.Int64N(1e15))
				if maybe(85) {
					lr.SetTimestamp(ts)
				}
				lr.SetObservedTimestamp(ts + 5)
				lr.SetSeverityNumber(plog.SeverityNumberInfo)
				if maybe(80) {
					var tid [16]byte
					var sid [8]byte
					for i := range tid {
						tid[i] = byte(rng.UintN(256))
					}
					for i := range sid {
						sid[i] = byte(rng.UintN(256))
					}
					lr.SetTraceID(tid)
					lr.SetSpanID(sid)
				}
				switch rng.IntN(5) {
				case 0, 1:
					lr.SetEventName(EvaluationEventName)
					putEvalAttrs(rng, lr.Attributes(), n)
				case 2:
					lr.Attributes().PutStr("event.name", EvaluationEventName)
					putEvalAttrs(rng, lr.Attributes(), n)
				case 3:
					lr.SetEventName("gen_ai.client.inference.operation.details")
					lr.Attributes().PutStr("gen_ai.evaluation.name", "not-an-evaluation-event")
				default:
					lr.Body().SetStr("user clicked thumbs down")
					lr.Attributes().PutInt("http.status_code", 200)
				}
			}
		}
	}
	return ld
}

func refLogEvaluations(t *testing.T, ld plog.Logs, n AttributeNames) []Evaluation {
	n = n.withDefaults()
	var out []Evaluation
	for _, rl := range ld.ResourceLogs().All() {
		res, _, _ := refEvalAttrs(t, rl.Resource().Attributes(), n)
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				la, score, has := refEvalAttrs(t, lr.Attributes(), n)
				name := lr.EventName()
				if name == "" {
					name = la["event.name"]
				}
				if name != EvaluationEventName {
					continue
				}
				ts := int64(lr.Timestamp())
				if ts == 0 {
					ts = int64(lr.ObservedTimestamp())
				}
				out = append(out, refEvaluation(TraceID(lr.TraceID()), SpanID(lr.SpanID()), ts, n, la, score, has, res))
			}
		}
	}
	return out
}

// TestLogEvaluationsMatchPdata reads evaluation events from OTLP log
// records, in both encodings, against pdata's view of the same messages.
func TestLogEvaluationsMatchPdata(t *testing.T) {
	var pm plog.ProtoMarshaler
	var pu plog.ProtoUnmarshaler
	var jm plog.JSONMarshaler
	var ju plog.JSONUnmarshaler
	names := AttributeNames{Tenant: "org.id"}
	total, byAttr := 0, 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 19))
		ld := genEvalLogs(rng, names.withDefaults())
		pb, err := pm.MarshalLogs(ld)
		if err != nil {
			t.Fatal(err)
		}
		js, err := jm.MarshalLogs(ld)
		if err != nil {
			t.Fatal(err)
		}
		back, err := pu.UnmarshalLogs(pb)
		if err != nil {
			t.Fatal(err)
		}
		want := refLogEvaluations(t, back, names)
		got, err := DecodeOTLPLogEvaluations(pb, names, Limits{}, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		compareEvaluations(t, seed, got, want)
		backJS, err := ju.UnmarshalLogs(js)
		if err != nil {
			t.Fatal(err)
		}
		gotJS, err := DecodeOTLPJSONLogEvaluations(js, names, Limits{}, nil)
		if err != nil {
			t.Fatalf("seed %d json: %v", seed, err)
		}
		compareEvaluations(t, seed, gotJS, refLogEvaluations(t, backJS, names))
		total += len(got)
		for _, rl := range back.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if _, ok := lr.Attributes().Get("event.name"); ok {
						byAttr++
					}
				}
			}
		}
	}
	if total < 500 || byAttr < 100 {
		t.Fatalf("corpus too narrow: %d evaluations, %d named by the event.name attribute", total, byAttr)
	}
}

// TestEvaluationBadInput names what is wrong: an unusable score, a trace id
// of the wrong length, a truncated message.
func TestEvaluationBadInput(t *testing.T) {
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(EvaluationEventName)
	lr.Attributes().PutStr("gen_ai.evaluation.name", "user_feedback")
	lr.Attributes().PutBool("gen_ai.evaluation.score.value", false)
	var pm plog.ProtoMarshaler
	var jm plog.JSONMarshaler
	pb, _ := pm.MarshalLogs(ld)
	js, _ := jm.MarshalLogs(ld)
	// A good event after the bad one, in the same message: it is kept.
	good := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	good.SetEventName(EvaluationEventName)
	good.SetTimestamp(42)
	good.Attributes().PutStr("gen_ai.evaluation.name", "user_feedback")
	good.Attributes().PutStr("gen_ai.evaluation.score.label", "incorrect")
	pb, _ = pm.MarshalLogs(ld)
	js, _ = jm.MarshalLogs(ld)
	const want = "1 evaluation event unusable: invalid record: resource_logs[0].scope_logs[0].log_records[0].attributes[gen_ai.evaluation.score.value]: want a double or an int, got bool"
	for enc, dec := range map[string]func([]byte, AttributeNames, Limits, []Evaluation) ([]Evaluation, error){
		"proto": DecodeOTLPLogEvaluations, "json": DecodeOTLPJSONLogEvaluations} {
		msg := pb
		if enc == "json" {
			msg = js
		}
		evs, err := dec(msg, AttributeNames{}, Limits{}, nil)
		var skipped EvaluationErrors
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &skipped) || len(skipped) != 1 || err.Error() != want {
			t.Errorf("%s: err = %v", enc, err)
		}
		if len(evs) != 1 || evs[0].Label != "incorrect" || evs[0].TimeUnixNano != 42 {
			t.Errorf("%s: the good event: %+v", enc, evs)
		}
	}
	// A truncated message is malformed, not silently short.
	if _, err := DecodeOTLPLogEvaluations(pb[:len(pb)-3], AttributeNames{}, Limits{}, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated: err = %v", err)
	}
	// A trace id of 3 bytes.
	bad := plog.NewLogs()
	lr = bad.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(EvaluationEventName)
	pb, _ = pm.MarshalLogs(bad)
	pb = append(pb[:0:0], pb...)
	// Append trace_id (9, LEN 3) inside the log record by hand: rebuild the
	// nesting with the extra field.
	rec := []byte{0x4a, 3, 1, 2, 3, 0x62, byte(len(EvaluationEventName))}
	rec = append(rec, EvaluationEventName...)
	scope := append([]byte{0x12, byte(len(rec))}, rec...)
	res := append([]byte{0x12, byte(len(scope))}, scope...)
	msg := append([]byte{0x0a, byte(len(res))}, res...)
	if _, err := DecodeOTLPLogEvaluations(msg, AttributeNames{}, Limits{}, nil); !errors.Is(err, ErrMalformed) ||
		err.Error() != "malformed record: resource_logs[0].scope_logs[0].log_records[0].trace_id: want 16 bytes, got 3" {
		t.Errorf("short trace id: err = %v", err)
	}
}

// TestEvaluationMapping turns events into corrections by name and label or
// score threshold, with deterministic ids and the context kept.
func TestEvaluationMapping(t *testing.T) {
	zero := 0.0
	m := EvaluationMapping{Rules: []EvaluationRule{
		{Name: "user_feedback", Labels: []string{"incorrect"}, ScoreAtMost: &zero},
		{Name: "toxicity", Labels: []string{"toxic"}, Kind: KindEscalate},
	}}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	tid := TraceID{9}
	evs := []Evaluation{
		{TraceID: tid, SpanID: SpanID{1}, TimeUnixNano: 5, Name: "user_feedback", Label: "incorrect", Tenant: "acme", ResponseID: "r1"},
		{TraceID: tid, TimeUnixNano: 6, Name: "user_feedback", Score: -0.5, HasScore: true, Tenant: "acme"},
		{TraceID: tid, TimeUnixNano: 7, Name: "user_feedback", Score: 0.5, HasScore: true, Label: "correct"}, // no
		{TraceID: tid, TimeUnixNano: 8, Name: "user_feedback", Score: math.NaN(), HasScore: true},            // no
		{TraceID: tid, TimeUnixNano: 9, Name: "relevance", Label: "incorrect"},                               // no rule
		{SessionID: "s1", TimeUnixNano: 10, Name: "toxicity", Label: "toxic"},
		{TimeUnixNano: 11, Name: "toxicity", Label: "toxic"}, // matches, but nothing to join by
	}
	got, unjoinable := m.Corrections(evs, nil)
	if !reflect.DeepEqual(unjoinable, []int{6}) {
		t.Fatalf("unjoinable %v", unjoinable)
	}
	if len(got) != 3 || got[0].Kind != KindThumbsDown || got[1].Kind != KindThumbsDown || got[2].Kind != KindEscalate {
		t.Fatalf("corrections %+v", got)
	}
	want0 := Correction{SchemaVersion: 1, EventID: "gen_ai.evaluation:09000000000000000000000000000000:0100000000000000:user_feedback:5",
		TimeUnixNano: 5, Tenant: "acme", TraceID: tid, Kind: KindThumbsDown, ResponseID: "r1",
		Context: []KV{{"gen_ai.evaluation.name", "user_feedback"}, {"gen_ai.evaluation.score.label", "incorrect"}, {"gen_ai.response.id", "r1"}}}
	if !reflect.DeepEqual(got[0], want0) {
		t.Fatalf("got  %+v\nwant %+v", got[0], want0)
	}
	if got[2].SessionID != "s1" {
		t.Fatalf("session join lost: %+v", got[2])
	}
	for _, bad := range []EvaluationMapping{
		{Rules: []EvaluationRule{{Labels: []string{"x"}}}},
		{Rules: []EvaluationRule{{Name: "x"}}},
		{Rules: []EvaluationRule{{Name: "x", Labels: []string{"y"}, Kind: "smile"}}},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
