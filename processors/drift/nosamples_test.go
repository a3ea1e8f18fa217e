package drift

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

const noScope = "opentelemetry.instrumentation.openai_v2"

// valuelessTraffic is 20 minutes of one call a second on each of keys:
// the calls of a key in blind carry no confidence for the first 10
// minutes (half from an OpenAI instrumentation scope, half from none),
// the others' always carry one.
func valuelessTraffic(keys []schemas.Key, blind map[schemas.Key]bool) []schemas.Span {
	r := rand.New(rand.NewPCG(23, 7))
	var spans []schemas.Span
	for i := 0; i < 20*60; i++ {
		for j, k := range keys {
			s := proctest.NewSpan(r, k, "chat", t0+int64(i)*int64(time.Second)+int64(j), 100)
			if !blind[k] || i >= 10*60 {
				s.Confidence, s.Has = 0.5+0.4*r.Float64(), s.Has|schemas.HasConfidence
			}
			if i%2 == 0 {
				s.Scope = noScope
			}
			spans = append(spans, s)
		}
	}
	return spans
}

// verdictLines renders the verdicts of key: window end, status, method
// and, for no_samples, the calls and the evaluations in a row.
func verdictLines(t *testing.T, vs []schemas.Verdict, key schemas.Key, metric string) []string {
	t.Helper()
	var got []string
	// A no_samples verdict's threshold is the mode's min_effect: 0.1 in
	// canary mode, 0 in reference mode (both at their defaults here).
	cfg := DefaultConfig()
	if strings.HasPrefix(metric, "canary_") {
		cfg = canaryConfig()
	}
	for _, v := range vs {
		if v.Key != key {
			continue
		}
		line := fmt.Sprintf("+%v %s %s", time.Duration(v.WindowEndUnixNano-t0), v.Status, v.Method)
		if v.Method == processors.MethodNoSamples {
			calls, _ := v.Detail(processors.DetailNoSamplesCalls)
			evals, _ := v.Detail(processors.DetailNoSamplesRun)
			line += fmt.Sprintf(" calls=%g evals=%g", calls, evals)
			if v.Metric != metric || v.Status != schemas.StatusInsufficientData || v.N != 0 || v.Threshold != cfg.EffectiveMinEffect() {
				t.Errorf("no_samples verdict %+v", v)
			}
			if v.Evidence == nil || !slices.Equal(v.Evidence.Scopes, []string{noScope, "unknown"}) {
				t.Errorf("no_samples verdict scopes %+v, want the OpenAI scope and unknown", v.Evidence)
			}
		}
		got = append(got, line)
	}
	return got
}

// checkBlindRun: got starts with lead verdicts of its own (insufficient
// data: no test), then no_samples verdicts from +5m to +10m (300 calls in
// the 5-minute window, evaluations 5 to 10), then has judged verdicts
// only.
func checkBlindRun(t *testing.T, what string, got []string, lead int) {
	t.Helper()
	var want []string
	for m := 1; m <= lead; m++ {
		want = append(want, fmt.Sprintf("+%dm0s insufficient_data none", m))
	}
	for m := 5; m <= 10; m++ {
		want = append(want, fmt.Sprintf("+%dm0s insufficient_data no_samples calls=300 evals=%d", m, m))
	}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("%s:\n%s\nwant first\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(got) == len(want) {
		t.Errorf("%s: no verdict once the values came", what)
	}
	for _, g := range got[len(want):] {
		if strings.Contains(g, processors.MethodNoSamples) {
			t.Errorf("%s, after the values came: %s", what, g)
		}
	}
}

// TestNoSamplesReference: a drift SLO (reference mode) whose key gets
// calls without confidence says so from the fifth evaluation on
// (no_samples_evaluations, default 5): status insufficient_data, method
// no_samples, the calls in the current window, the evaluations in a row,
// the scopes; it stops once the calls carry it. On main such a key got
// no verdict. The key with values is judged as ever.
func TestNoSamplesReference(t *testing.T) {
	blind, seen := schemas.Key{Tenant: "blind", Model: "m"}, schemas.Key{Tenant: "seen", Model: "m"}
	spans := valuelessTraffic([]schemas.Key{blind, seen}, map[schemas.Key]bool{blind: true})
	from, to := proctest.Bounds(spans, int64(time.Minute))
	vs := proctest.Drive(t, newDrift(t, DefaultConfig()), spans, from, to)
	checkBlindRun(t, "verdicts of the key without confidence", verdictLines(t, vs, blind, "ks_confidence"), 0)
	for _, l := range verdictLines(t, vs, seen, "") {
		if strings.Contains(l, processors.MethodNoSamples) {
			t.Fatalf("the key with values: %s", l)
		}
	}
}

// TestNoSamplesCanary: in canary mode the judged key is the canary. It is
// blind when its own calls carry no value (tenant a), and when it has
// values but its baseline's calls carry none (tenant b: nothing to
// compare with); either way the canary key gets the no_samples verdict,
// counting the calls without a value. Baselines and other variants get
// no verdict of their own, blind or not.
func TestNoSamplesCanary(t *testing.T) {
	key := func(tenant, variant string) schemas.Key {
		return schemas.Key{Tenant: tenant, Model: "m", Variant: variant}
	}
	ca, ba, oa := key("a", "canary"), key("a", "baseline"), key("a", "other")
	cb, bb := key("b", "canary"), key("b", "baseline")
	spans := valuelessTraffic([]schemas.Key{ca, ba, oa, cb, bb}, map[schemas.Key]bool{ca: true, oa: true, bb: true})
	from, to := proctest.Bounds(spans, int64(time.Minute))
	vs := proctest.Drive(t, newDrift(t, canaryConfig()), spans, from, to)
	checkBlindRun(t, "canary without values", verdictLines(t, vs, ca, "canary_ks_confidence"), 0)
	// Before the fifth evaluation the canary with values is judged as on
	// main: insufficient data, no baseline values.
	checkBlindRun(t, "canary whose baseline has no values", verdictLines(t, vs, cb, "canary_ks_confidence"), 4)
	for _, k := range []schemas.Key{ba, oa, bb} {
		if l := verdictLines(t, vs, k, ""); len(l) > 0 {
			t.Errorf("verdicts of %v: %v", k, l)
		}
	}
}

// TestNoSamplesSnapshot: the calls without a value are in the snapshot
// (format 3), so a restored processor continues identically, in both
// modes; a format-2 snapshot (before them) still restores its windows.
func TestNoSamplesSnapshot(t *testing.T) {
	ca, ba := schemas.Key{Tenant: "a", Variant: "canary"}, schemas.Key{Tenant: "a", Variant: "baseline"}
	cb, bb := schemas.Key{Tenant: "b", Variant: "canary"}, schemas.Key{Tenant: "b", Variant: "baseline"}
	spans := valuelessTraffic([]schemas.Key{ca, ba, cb, bb}, map[schemas.Key]bool{ca: true, bb: true})
	from, to := proctest.Bounds(spans, int64(time.Minute))
	for _, cfg := range []Config{DefaultConfig(), canaryConfig()} {
		newP := func() processors.Processor { return newDrift(t, cfg) }
		whole := proctest.Drive(t, newP(), spans, from, to)
		for _, cut := range []int64{3, 7, 12} {
			proctest.Resume(t, newP, proctest.SpanEvents(spans), from, to, t0+cut*int64(time.Minute), whole)
		}
	}
	// Formats 3 and 2 (before the sequential statistics; 2 also before
	// the calls without a value) of a processor whose slots are Every
	// wide (ks only, as before Step): the same windows, statistics 0.
	ksOnly := DefaultConfig()
	ksOnly.Detectors = []string{DetectorKS}
	p := newDrift(t, ksOnly)
	for i := range spans {
		if spans[i].Key == ba {
			p.ObserveSpan(spans[i].Key, &spans[i])
		}
	}
	b, _ := p.MarshalBinary()
	tracker := b[len(b)-4:] // an empty nosamples.Tracker
	v3 := append(append([]byte(nil), b[:len(b)-4-24]...), tracker...)
	v3[4+len("fusebox.drift")] = 3
	v2 := append([]byte(nil), v3[:len(v3)-4]...)
	v2[4+len("fusebox.drift")] = 2
	for i, old := range [][]byte{v2, v3} {
		q := newDrift(t, ksOnly)
		if err := q.UnmarshalBinary(old); err != nil {
			t.Fatalf("format %d: %v", i+2, err)
		}
		if back, _ := q.MarshalBinary(); q.Keys() != 1 || string(back) != string(b) {
			t.Errorf("format %d restored %d keys, a different state", i+2, q.Keys())
		}
	}
}

// TestConfigJSONWithoutNoSamplesEvaluations: at its default the field is
// not in the configuration hash's view (it only judges blindness and was
// added without changing any config version); set, it is. The
// detectors' fields are in whatever their value: editing one changes
// the config version.
func TestConfigJSONWithoutNoSamplesEvaluations(t *testing.T) {
	c := DefaultConfig()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"Metric":"confidence","IncludeErrors":false,"Mode":"reference","Window":300000000000,"Every":60000000000,"ReferenceWindow":3600000000000,"CanaryVariant":"canary","BaselineVariant":"baseline","Alpha":0,"Consecutive":1,"MinEffect":0,"MinSamples":50,"MaxSamplesPerSlot":2000,"FalseAlarms":0.001,"Detectors":null,"Step":0,"MinWindowSamples":500,"MaxWindow":0,"CUSUMShift":0.3,"SequentialMinReference":400,"SliceThreshold":null,"SliceQuantile":0.01,"SliceFactor":3,"SliceTail":""}`
	if string(b) != want {
		t.Errorf("default JSON\n%s\nwant\n%s", b, want)
	}
	c.NoSamplesEvaluations = 3
	if b, _ = json.Marshal(c); !strings.Contains(string(b), `"NoSamplesEvaluations":3`) {
		t.Errorf("JSON with no_samples_evaluations 3 lacks it: %s", b)
	}
	c = DefaultConfig()
	c.CUSUMShift = 1
	if b, _ = json.Marshal(c); !strings.Contains(string(b), `"CUSUMShift":1,`) {
		t.Errorf("JSON with cusum_shift 1 lacks it: %s", b)
	}
}
