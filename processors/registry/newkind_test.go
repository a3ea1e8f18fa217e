package registry_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/internal/counter"
	"github.com/fusebox-dev/fusebox/processors/registry"
	"github.com/fusebox-dev/fusebox/schemas"
)

// counterFile runs the test-only counter kind next to a shipped one, with
// a breaker rule on the counter's metric.
const counterFile = `
slos:
  - name: calls
    counter:
      every: 1m
      limit: 30
  - name: latency
    tail:
      budget: 3000
breaker:
  rules:
    - processor: counter
      metric: calls
      action: trip
      k: 1
      n: 1
`

// TestAddingAKindIsOneLine: a processor kind added in one line — the
// registry.With below; the package processors/internal/counter is laid
// out as a shipped kind is, and nothing else names it — is decoded,
// validated and summarised as `fusebox config check` does (config.Load,
// config.WorkerConfig, Config.Summary), runs on the engine (its verdicts
// come out and trip the breaker), and checkpoints (a worker restored from
// a snapshot taken mid-run continues exactly as the uninterrupted one).
// The shipped list is not changed by it.
func TestAddingAKindIsOneLine(t *testing.T) {
	loader := config.Loader{Kinds: registry.With(counter.Kind())} // the one line

	// config check: load, validate, build the workers, summarise.
	f, err := loader.Parse("counter.yaml", []byte(counterFile))
	if err != nil {
		t.Fatalf("config check: %v", err)
	}
	sec, ok := f.SLOs[0].Processor()
	if !ok || sec.Kind.Name != counter.Name || !strings.Contains(sec.Config.Summary(), "breach above 30 per 1m0s") {
		t.Fatalf("slo calls: section %+v", sec)
	}
	wc, err := config.WorkerConfig(f)
	if err != nil {
		t.Fatalf("config check: %v", err)
	}
	if wc.SLOs[0].StateID == "" || wc.SLOs[0].StateID == wc.SLOs[1].StateID {
		t.Fatalf("state ids %q, %q", wc.SLOs[0].StateID, wc.SLOs[1].StateID)
	}
	// Its section is checked as any kind's: its own Validate, unknown
	// keys, and the breaker rules against its Metrics.
	for _, c := range []struct{ from, to, want string }{
		{"limit: 30", "limit: -1", "counter.yaml:6: slos[0].counter.limit: must not be negative"},
		{"every: 1m", "evry: 1m", "counter.yaml:5: slos[0].counter.evry: unknown field (did you mean every?)"},
		{"metric: calls", "metric: cals", `counter.yaml:13: breaker.rules[0].metric: no calls verdict has metric "cals" (did you mean calls?)`},
		{"counter:\n", "countr:\n", "slos[0]: needs one processor section"},
	} {
		_, err := loader.Parse("counter.yaml", []byte(strings.Replace(counterFile, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("with %q: error %v, want %q", c.to, err, c.want)
		}
	}
	// The shipped list does not know the kind.
	if _, err := config.Parse("counter.yaml", []byte(counterFile)); err == nil || !strings.Contains(err.Error(), "slos[0].counter: unknown field") {
		t.Errorf("config.Parse (the shipped kinds) accepted the counter kind: %v", err)
	}
	if _, ok := registry.Lookup(counter.Name); ok {
		t.Error("registry.With changed the shipped list")
	}
	// Adding the kind keeps the config version (every verdict id) of a
	// file without it; a file with it hashes its section.
	shipped, err := config.Load("../../examples/fusebox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if with, err := loader.Load("../../examples/fusebox.yaml"); err != nil || with.Version != shipped.Version {
		t.Errorf("the example's version %s with the counter kind, %s without (%v)", with.Version, shipped.Version, err)
	}
	if g, err := loader.Parse("counter.yaml", []byte(strings.Replace(counterFile, "limit: 30", "limit: 31", 1))); err != nil || g.Version == f.Version {
		t.Errorf("the counter's limit is not in the config version (%v)", err)
	}

	// The engine: ten minutes of one call a second on two keys.
	var recs []engine.KeyedRecord
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	keys := []schemas.Key{{Tenant: "acme", Service: "chat", Model: "m", Variant: "v"}, {Tenant: "acme", Service: "search", Model: "m", Variant: "v"}}
	for i := range 600 {
		e := t0 + int64(i)*int64(time.Second)
		rec := engine.KeyedRecord{Offset: int64(i), Source: engine.SourceRef{Topic: "otlp_spans", Offset: int64(i)}, SourceTopics: "otlp_spans:1", SourceMaxEventTime: e}
		for j, k := range keys {
			s := schemas.Span{Key: k, StartUnixNano: e - int64(100*time.Millisecond), EndUnixNano: e, DurationMs: 100}
			s.SpanID[0], s.SpanID[1], s.SpanID[2] = byte(i), byte(i>>8), byte(j)
			copy(s.TraceID[:], s.SpanID[:])
			rec.Spans = append(rec.Spans, s)
		}
		recs = append(recs, rec)
	}
	run := func(w *engine.Worker, recs []engine.KeyedRecord) schemas.Output {
		for i := range recs {
			w.Apply(&recs[i])
		}
		return w.TakeOutput()
	}
	whole, err := engine.NewWorker(wc, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := run(whole, recs[:300])
	var counts []schemas.Verdict
	for _, v := range first.Verdicts {
		if v.Processor == counter.Name {
			counts = append(counts, v)
		}
	}
	if len(counts) < 2*3 || counts[len(counts)-1].Value < 180 {
		t.Fatalf("after 5 minutes: %d counter verdicts (want one per key per minute, counting on): %+v", len(counts), counts)
	}
	if len(first.Commands) == 0 || first.Commands[0].Action != schemas.ActionTrip {
		t.Fatalf("the counter's breaches tripped no breaker: %+v", first.Commands)
	}

	// Checkpoint, restart (a new WorkerConfig from the same file), and
	// continue: the same output as the uninterrupted worker, and not that
	// of a worker that lost the counts.
	snap, err := whole.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	wc2, err := config.WorkerConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	restored, rep, err := engine.RestoreWorker(wc2, 0, snap)
	if err != nil || !rep.Full() {
		t.Fatalf("restore: %v, report %+v", err, rep)
	}
	want := run(whole, recs[300:])
	got := run(restored, recs[300:])
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got.Verdicts), len(want.Verdicts)) {
			if !reflect.DeepEqual(got.Verdicts[i], want.Verdicts[i]) {
				t.Fatalf("restored worker, verdict %d:\n got  %+v\n want %+v", i, got.Verdicts[i], want.Verdicts[i])
			}
		}
		t.Fatalf("restored worker: %d verdicts %d commands, want %d and %d (or the commands differ)", len(got.Verdicts), len(got.Commands), len(want.Verdicts), len(want.Commands))
	}
	fresh, err := engine.NewWorker(wc2, 0)
	if err != nil {
		t.Fatal(err)
	}
	lost := run(fresh, recs[300:])
	if reflect.DeepEqual(lost.Verdicts, want.Verdicts) {
		t.Fatal("a worker without the checkpoint gives the same verdicts: the test does not see the counter's state")
	}
}
