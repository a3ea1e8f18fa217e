package tail

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// ttftTraffic is 12 minutes of one call a second on two keys: blind's
// spans carry no TTFT (half from an OpenAI instrumentation scope, half
// from no scope), seen's carry one; from minute 10 blind's carry one too.
func ttftTraffic() (blind, seen schemas.Key, spans []schemas.Span) {
	blind, seen = schemas.Key{Tenant: "blind", Model: "m"}, schemas.Key{Tenant: "seen", Model: "m"}
	for i := 0; i < 12*60; i++ {
		for j, k := range []schemas.Key{blind, seen} {
			var s schemas.Span
			s.Key = k
			s.EndUnixNano = t0 + int64(i)*int64(time.Second) + int64(j)
			s.DurationMs = 900
			s.TraceID[0], s.TraceID[1], s.TraceID[2] = byte(i), byte(i>>8), byte(j)
			s.SpanID[0] = 1
			if k == seen || i >= 10*60 {
				s.Has |= schemas.HasTTFT
				s.TTFTMs = 200 + float64(i%50)
			}
			if i%2 == 0 {
				s.Scope = "opentelemetry.instrumentation.openai_v2"
			}
			spans = append(spans, s)
		}
	}
	return blind, seen, spans
}

func ttftConfig() Config {
	c := testConfig()
	c.Metric = processors.MetricTTFT
	c.MinSamples = 10
	return c
}

// TestNoSamplesVerdict: a ttft_ms SLO whose key gets calls without TTFT
// says so from the fifth evaluation on (no_samples_evaluations, default
// 5) — status insufficient_data, method no_samples, the calls in the
// window, the evaluations in a row, the scopes of those calls — and stops
// once the key's calls carry TTFT. On main such a key got no verdict at
// all. The key with TTFT is judged as ever.
func TestNoSamplesVerdict(t *testing.T) {
	_, seen, spans := ttftTraffic()
	from, to := proctest.Bounds(spans, int64(time.Minute))
	vs := proctest.Drive(t, newTail(t, ttftConfig()), spans, from, to)
	var got []string
	for _, v := range vs {
		if v.Key == seen {
			if v.Method == MethodNoSamples {
				t.Fatalf("the key with TTFT got a no_samples verdict at +%v", time.Duration(v.WindowEndUnixNano-t0))
			}
			continue
		}
		calls, _ := v.Detail(DetailCalls)
		evals, _ := v.Detail(DetailEvaluations)
		got = append(got, fmt.Sprintf("+%v %s %s calls=%g evals=%g", time.Duration(v.WindowEndUnixNano-t0), v.Status, v.Method, calls, evals))
		if v.Method == MethodNoSamples {
			if v.Metric != "p999_ttft_ms" || v.Status != schemas.StatusInsufficientData || v.N != 0 {
				t.Errorf("no_samples verdict %+v", v)
			}
			if v.Evidence == nil || !slices.Equal(v.Evidence.Scopes, []string{"opentelemetry.instrumentation.openai_v2", "unknown"}) {
				t.Errorf("no_samples verdict scopes %+v, want the OpenAI scope and unknown", v.Evidence)
			}
		}
	}
	want := []string{
		"+5m0s insufficient_data no_samples calls=300 evals=5",
		"+6m0s insufficient_data no_samples calls=360 evals=6",
		"+7m0s insufficient_data no_samples calls=420 evals=7",
		"+8m0s insufficient_data no_samples calls=480 evals=8",
		"+9m0s insufficient_data no_samples calls=540 evals=9",
		"+10m0s insufficient_data no_samples calls=600 evals=10",
	}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("verdicts of the key without TTFT:\n%v\nwant first\n%v", got, want)
	}
	for _, g := range got[len(want):] {
		if strings.Contains(g, MethodNoSamples) {
			t.Errorf("after TTFT came: %s, want judged verdicts only", g)
		}
	}
	if len(got) == len(want) {
		t.Error("no verdict of the key once its calls carried TTFT")
	}
}

// TestNoSamplesSnapshot: the count of calls without the metric is in the
// snapshot (format 3), so a restored processor continues identically;
// format 2 snapshots (before it) still restore.
func TestNoSamplesSnapshot(t *testing.T) {
	_, _, spans := ttftTraffic()
	newP := func() processors.Processor { return newTail(t, ttftConfig()) }
	from, to := proctest.Bounds(spans, int64(time.Minute))
	whole := proctest.Drive(t, newP(), spans, from, to)
	for _, cut := range []int64{3, 6, 10} {
		proctest.Resume(t, newP, proctest.SpanEvents(spans), from, to, t0+cut*int64(time.Minute), whole)
	}
	// A format-2 snapshot: format 3 of a state without such keys, less the
	// trailing count of them.
	p := newTail(t, testConfig())
	b, _ := p.MarshalBinary()
	v2 := append([]byte(nil), b[:len(b)-4]...)
	v2[4+len("fusebox.tail")] = 2
	if err := newTail(t, testConfig()).UnmarshalBinary(v2); err != nil {
		t.Fatalf("format 2: %v", err)
	}
}

// TestConfigJSONWithoutNoSamplesEvaluations: at its default the new field
// is not in the configuration hash's view, so no config version of an
// existing file changes; set, it is.
func TestConfigJSONWithoutNoSamplesEvaluations(t *testing.T) {
	c := DefaultConfig()
	c.Budget = 3000
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"Metric":"duration_ms","IncludeErrors":false,"P":0.999,"Budget":3000,"Window":600000000000,"Every":60000000000,"ThresholdQuantile":0.95,"MinExceedances":50,"MinSamples":200,"MaxSamplesPerSlot":20000}`
	if string(b) != want {
		t.Errorf("default JSON\n%s\nwant\n%s", b, want)
	}
	c.NoSamplesEvaluations = 3
	if b, _ = json.Marshal(c); !strings.Contains(string(b), `"NoSamplesEvaluations":3`) || strings.Contains(string(b), "Level") {
		t.Errorf("JSON with no_samples_evaluations 3 lacks it, or has the default level: %s", b)
	}
	// The level (added after no_samples_evaluations) likewise: left out at
	// its default, in the view when set, after the other fields.
	c.NoSamplesEvaluations = DefaultNoSamplesEvaluations
	c.Level = 0.9999988
	if b, _ = json.Marshal(c); string(b) != strings.TrimSuffix(want, "}")+`,"Level":0.9999988}` {
		t.Errorf("JSON with level 0.9999988: %s", b)
	}
}

// TestNoSamplesIgnoresCallsNotStreamed: under ttft_ms a key whose calls are
// all plain (the span says gen_ai.request.stream false) lacks TTFT by
// design and gets no no_samples verdict, at any evaluation; a key whose
// spans carry no streaming flag at all still does (fusebox cannot tell).
func TestNoSamplesIgnoresCallsNotStreamed(t *testing.T) {
	blind, _, spans := ttftTraffic()
	plain := schemas.Key{Tenant: "plain", Model: "m"}
	var more []schemas.Span
	for _, s := range spans {
		if s.Key == blind && s.Has&schemas.HasTTFT == 0 {
			p := s
			p.Key = plain
			p.Has |= schemas.HasStream
			p.Stream = false
			p.SpanID[0] = 2
			more = append(more, p)
		}
	}
	spans = append(spans, more...)
	slices.SortStableFunc(spans, func(a, b schemas.Span) int { return int(a.EndUnixNano - b.EndUnixNano) })
	from, to := proctest.Bounds(spans, int64(time.Minute))
	vs := proctest.Drive(t, newTail(t, ttftConfig()), spans, from, to)
	blindSeen := false
	for _, v := range vs {
		if v.Method != MethodNoSamples {
			continue
		}
		switch v.Key {
		case plain:
			t.Fatalf("the key of plain calls got a no_samples verdict at +%v", time.Duration(v.WindowEndUnixNano-t0))
		case blind:
			blindSeen = true
		}
	}
	if !blindSeen {
		t.Error("the key without a streaming flag got no no_samples verdict")
	}
}
