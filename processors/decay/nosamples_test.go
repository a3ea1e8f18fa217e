package decay

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// scorelessTraffic is 2 hours of one call every 10 s on two keys: blind's
// spans carry no alignment score for the first hour (half from an OpenAI
// instrumentation scope, half from none), seen's always carry one.
func scorelessTraffic() (blind, seen schemas.Key, spans []schemas.Span) {
	blind, seen = keySmall, keyLarge
	r := rand.New(rand.NewPCG(23, 5))
	for i := 0; i < 2*60*6; i++ {
		for j, k := range []schemas.Key{blind, seen} {
			s := proctest.NewSpan(r, k, "chat", t0+int64(i)*10*int64(time.Second)+int64(j), 100)
			if k == seen || i >= 60*6 {
				s.Alignment, s.Has = 0.7+0.1*r.Float64(), s.Has|schemas.HasAlignment
			}
			if i%2 == 0 {
				s.Scope = "openinference.instrumentation.openai"
			}
			spans = append(spans, s)
		}
	}
	return blind, seen, spans
}

// TestNoSamplesVerdict: a decay SLO whose key gets calls without an
// alignment score says so from the fifth evaluation on
// (no_samples_evaluations, default 5) — status insufficient_data, method
// no_samples, the calls in the window, the evaluations in a row, the
// scopes of those calls — and stops at the first evaluation whose window
// holds a score. On main such a key got no verdict at all. The key with
// scores is judged as ever.
func TestNoSamplesVerdict(t *testing.T) {
	blind, seen, spans := scorelessTraffic()
	from, to := proctest.Bounds(spans, int64(DefaultConfig().Every))
	vs := proctest.Drive(t, mustNew(t, DefaultConfig()), spans, from, to)
	var got []string
	judged := 0
	for _, v := range vs {
		switch v.Key {
		case seen:
			if v.Method == processors.MethodNoSamples {
				t.Fatalf("the key with scores got a no_samples verdict at +%v", time.Duration(v.WindowEndUnixNano-t0))
			}
			judged++
		case blind:
			calls, _ := v.Detail(processors.DetailNoSamplesCalls)
			evals, _ := v.Detail(processors.DetailNoSamplesRun)
			got = append(got, fmt.Sprintf("+%v %s %s calls=%g evals=%g", time.Duration(v.WindowEndUnixNano-t0), v.Status, v.Method, calls, evals))
			if v.Method == processors.MethodNoSamples {
				if v.Metric != "decline_alignment" || v.Status != schemas.StatusInsufficientData || v.N != 0 || v.Threshold != DefaultConfig().Limit {
					t.Errorf("no_samples verdict %+v", v)
				}
				if v.Evidence == nil || !slices.Equal(v.Evidence.Scopes, []string{"openinference.instrumentation.openai", "unknown"}) {
					t.Errorf("no_samples verdict scopes %+v, want the OpenInference scope and unknown", v.Evidence)
				}
			}
		}
	}
	var want []string
	for m := 25; m <= 60; m += 5 {
		want = append(want, fmt.Sprintf("+%v insufficient_data no_samples calls=%d evals=%d", time.Duration(m)*time.Minute, m*6, m/5))
	}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("verdicts of the key without scores:\n%s\nwant first\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, g := range got[len(want):] {
		if strings.Contains(g, processors.MethodNoSamples) {
			t.Errorf("after the scores came: %s, want judged verdicts only", g)
		}
	}
	if len(got) == len(want) || judged == 0 {
		t.Errorf("%d verdicts of the blind key once it had scores, %d of the key with scores: want some of each", len(got)-len(want), judged)
	}
}

// TestNoSamplesSnapshot: the calls without a score are in the snapshot
// (format 3), so a restored processor continues identically; a format-2
// snapshot (before them) still restores its windows.
func TestNoSamplesSnapshot(t *testing.T) {
	_, seen, spans := scorelessTraffic()
	newP := func() processors.Processor { return mustNew(t, DefaultConfig()) }
	every := int64(DefaultConfig().Every)
	from, to := proctest.Bounds(spans, every)
	whole := proctest.Drive(t, newP(), spans, from, to)
	for _, cut := range []int64{15, 30, 65} {
		proctest.Resume(t, newP, proctest.SpanEvents(spans), from, to, t0+cut*minute, whole)
	}
	// A format-2 snapshot: format 3 of a state with scores only, less the
	// trailing count of keys without them.
	p := mustNew(t, DefaultConfig())
	for i := range spans {
		if spans[i].Key == seen {
			p.ObserveSpan(spans[i].Key, &spans[i])
		}
	}
	b, _ := p.MarshalBinary()
	v2 := append([]byte(nil), b[:len(b)-4]...)
	v2[4+len("fusebox.decay")] = 2
	q := mustNew(t, DefaultConfig())
	if err := q.UnmarshalBinary(v2); err != nil {
		t.Fatalf("format 2: %v", err)
	}
	if q.Keys() != 1 {
		t.Fatalf("format 2 restored %d keys, want 1", q.Keys())
	}
	if back, _ := q.MarshalBinary(); string(back) != string(b) {
		t.Error("format 2 restored a different state")
	}
}

// TestConfigJSONWithoutNoSamplesEvaluations: at its default the new field
// is not in the configuration hash's view, so no config version of an
// existing file changes; set, it is.
func TestConfigJSONWithoutNoSamplesEvaluations(t *testing.T) {
	c := DefaultConfig()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"Metric":"alignment","Window":3600000000000,"Every":300000000000,"Limit":-0.12,"Alpha":0.01,"MinSamples":30,"MinCoverage":0.5,"MaxSamplesPerSlot":200,"TheilSenMaxPoints":300}`
	if string(b) != want {
		t.Errorf("default JSON\n%s\nwant\n%s", b, want)
	}
	c.NoSamplesEvaluations = 3
	if b, _ = json.Marshal(c); !strings.Contains(string(b), `"NoSamplesEvaluations":3`) {
		t.Errorf("JSON with no_samples_evaluations 3 lacks it: %s", b)
	}
}
