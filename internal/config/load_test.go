package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"github.com/fusebox-dev/fusebox/schemas"
)

const minimal = `
slos:
  - name: chat-latency
    match: {service: [chat]}
    tail:
      budget: 2500
      window: 5m
`

func TestParseAppliesDefaults(t *testing.T) {
	f, err := Parse("x.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := f.SLOs[0].Processor()
	tl, _ := sec.Config.(*tail.Config)
	if tl == nil || tl.Budget != 2500 || tl.Window != 5*time.Minute || tl.P != 0.999 || tl.Every != time.Minute {
		t.Fatalf("tail section = %+v, want budget and window from the file and defaults for the rest", tl)
	}
	if f.Topics.Keyed != "fusebox.keyed" || f.Time.AllowedLateness != 30*time.Second {
		t.Fatalf("defaults not applied: %+v %+v", f.Topics, f.Time)
	}
	if len(f.Version) != 12 {
		t.Fatalf("version %q, want 12 hex characters from the file hash", f.Version)
	}
	if f.HTTP.UI || f.HTTP.Listen != "127.0.0.1:9464" {
		t.Fatalf("http %+v, want the live page off by default on 127.0.0.1:9464", f.HTTP)
	}
	if f.SLOs[0].Match.Service[0] != "chat" {
		t.Fatalf("match = %+v", f.SLOs[0].Match)
	}
}

func TestParseErrorsNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"typo", "slos:\n  - name: a\n    tail:\n      budgt: 3\n", []string{"x.yaml:4: slos[0].tail.budgt: unknown field (did you mean budget?)"}},
		{"bad p", "slos:\n  - name: a\n    tail:\n      budget: 3\n      p: 1.5\n", []string{"x.yaml:5: slos[0].tail.p: must be in (0, 1), got 1.5"}},
		{"two processors", "slos:\n  - name: a\n    tail: {budget: 1}\n    drift: {}\n", []string{"x.yaml:2: slos[0]: has tail and drift"}},
		{"no processor", "slos:\n  - name: a\n", []string{"slos[0]: needs one processor section"}},
		{"missing budget", "slos:\n  - name: a\n    tail: {}\n", []string{"x.yaml:3: slos[0].tail.budget: must be set"}},
		{"bad duration", "time:\n  allowed_lateness: 30 seconds\nslos:\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:2: time.allowed_lateness: not a duration"}},
		{"window not multiple", "slos:\n  - name: a\n    tail: {budget: 1, window: 90s}\n", []string{"slos[0].tail.window: must be a whole multiple of every"}},
		{"duplicate names", "slos:\n  - name: a\n    tail: {budget: 1}\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:4: slos[1].name: same name as slos[0]"}},
		{"broker", "kafka:\n  brokers: [localhost]\nslos:\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:2: kafka.brokers[0]: want host:port"}},
		{"limits", "limits:\n  max_spans_per_message: 0\nslos:\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:2: limits.max_spans_per_message: must be positive"}},
		{"scaling scope", "slos:\n  - name: a\n    scaling: {stddev_budget_ms: 100, scope: [service]}\n", []string{"slos[0].scaling.scope: must include tenant"}},
		{"checkpoint records", "time:\n  checkpoint_records: 10\nslos:\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:2: time.checkpoint_records: must be at least 1000"}},
		{"replication factor", "topics:\n  replication_factor: 0\nslos:\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:2: topics.replication_factor: must be -1 (the broker's default) or at least 1, got 0"}},
		{"min insync over replicas", "topics:\n  replication_factor: 2\n  min_insync_replicas: 3\nslos:\n  - name: a\n    tail: {budget: 1}\n",
			[]string{"x.yaml:3: topics.min_insync_replicas: 3 is more than topics.replication_factor 2: no write could be acknowledged"}},
		{"log format", "log:\n  format: yaml\nslos:\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:2: log.format: must be json or text"}},
		{"unacked bytes", "time:\n  max_unacked_bytes: 1000\nslos:\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:2: time.max_unacked_bytes: must be at least 1048576"}},
		{"evaluation kind", "evaluations:\n  rules:\n    - name: user_feedback\n      labels: [incorrect]\n      kind: smile\nslos:\n  - name: a\n    tail: {budget: 1}\n",
			[]string{`x.yaml:5: evaluations.rules[0].kind: unknown correction kind "smile"`}},
		{"evaluation matches nothing", "evaluations:\n  rules:\n    - name: user_feedback\nslos:\n  - name: a\n    tail: {budget: 1}\n",
			[]string{"x.yaml:3: evaluations.rules[0]: needs labels or score_at_most"}},
		{"log topic is a span topic", "topics:\n  logs: [otlp_spans]\nevaluations:\n  rules: [{name: f, labels: [x]}]\nslos:\n  - name: a\n    tail: {budget: 1}\n",
			[]string{`x.yaml:2: topics.logs: log topic "otlp_spans" is also a span or correction topic`}},
		{"empty operation", "slos:\n  - name: a\n    match:\n      operation: [chat, \"\"]\n    tail: {budget: 1}\n", []string{"x.yaml:4: slos[0].match.operation[1]: must not be empty"}},
		{"ui without listen", "http:\n  listen: \"\"\n  ui: true\nslos:\n  - name: a\n    tail: {budget: 1}\n", []string{"x.yaml:3: http.ui: the live page needs http.listen"}},
		{"not yaml", "slos: [\n", []string{"x.yaml"}},
		// An unknown key no longer hides the semantic errors of the rest:
		// every problem at once, each with its line.
		{"typo and bad p", "kafka:\n  brokerz: [a:1]\nslos:\n  - name: a\n    tail:\n      budget: 3\n      p: 1.5\n",
			[]string{"x.yaml:2: kafka.brokerz: unknown field (did you mean brokers?)", "x.yaml:7: slos[0].tail.p: must be in (0, 1), got 1.5"}},
		{"typo, wrong type and bad p", "http:\n  listn: x\n  pprof: [1]\nslos:\n  - name: a\n    tail: {budget: 1, p: 2}\n",
			[]string{"x.yaml:2: http.listn: unknown field", "x.yaml:3:", "cannot unmarshal", "x.yaml:6: slos[0].tail.p: must be in (0, 1), got 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not a *config.Error", err)
			}
		})
	}
}

// TestOverridesWinAndNameTheirSource: an override replaces the file's value
// before validation, and an invalid one is reported under its source, not
// under a line of the file that no longer holds the value used.
func TestOverridesWinAndNameTheirSource(t *testing.T) {
	y := []byte("kafka:\n  brokers: [\"10.0.0.1:9092\"]\n" + minimal)
	set := func(v []string) Override {
		return Override{Field: "kafka.brokers", Source: "--brokers", Apply: func(f *File) { f.Kafka.Brokers = v }}
	}
	f, err := ParseWith("x.yaml", y, set([]string{"127.0.0.1:1"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Kafka.Brokers; len(got) != 1 || got[0] != "127.0.0.1:1" {
		t.Fatalf("brokers %v, want the override's", got)
	}
	_, err = ParseWith("x.yaml", y, set([]string{"nohost"}))
	if err == nil || !strings.Contains(err.Error(), `--brokers: kafka.brokers[0]: want host:port, got "nohost"`) || strings.Contains(err.Error(), "x.yaml:2") {
		t.Fatalf("error %v, want it under --brokers and no line of x.yaml", err)
	}
}

func TestVersionHashesOnlyWhatDecidesVerdicts(t *testing.T) {
	parse := func(y string) string {
		t.Helper()
		f, err := Parse("x.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return f.Version
	}
	base := parse(minimal)
	if v := parse("# a comment\nkafka: {group: other, brokers: [\"10.0.0.1:9092\"]}\nhttp: {listen: \"\"}\n" + minimal); v != base {
		t.Fatalf("version changed with the brokers, group, http and a comment: %s -> %s", base, v)
	}
	if v := parse(strings.Replace(minimal, "budget: 2500", "budget: 2600", 1)); v == base {
		t.Fatal("version did not change with an SLO budget")
	}
	if v := parse("time: {allowed_lateness: 1m}\n" + minimal); v == base {
		t.Fatal("version did not change with the allowed lateness")
	}
	if v := parse("version: pinned\n" + minimal); v != "pinned" {
		t.Fatalf("explicit version %q, want pinned", v)
	}
}

// TestSLOHashBytesUnchanged: the configuration hash (every verdict id,
// the engine's state) marshals the SLO entries; since the processor
// registry they are held as sections, and MarshalJSON must write the bytes
// the former struct (one pointer field per kind) wrote, or every deployed
// file would get a new version. The example has every kind.
func TestSLOHashBytesUnchanged(t *testing.T) {
	type legacySLO struct {
		Name        string
		Match       schemas.Match
		Tail        *tail.Config
		Drift       *drift.Config
		Decay       *decay.Config
		Scaling     *scaling.Config
		Corrections *corrections.Config
		Burnrate    *burnrate.Config
	}
	f, err := Load("../../examples/fusebox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var legacy []legacySLO
	var kept []SLO
	for _, s := range f.SLOs {
		l := legacySLO{Name: s.Name, Match: s.Match}
		// The legacy field of the section's kind: "Tail" for tail, ...
		sec, _ := s.Processor()
		field := reflect.ValueOf(&l).Elem().FieldByName(strings.ToUpper(sec.Kind.Name[:1]) + sec.Kind.Name[1:])
		if !field.IsValid() {
			continue // a kind added since: hashed as a member of its own
		}
		field.Set(reflect.ValueOf(sec.Config))
		legacy = append(legacy, l)
		kept = append(kept, s)
	}
	if len(kept) != 6 {
		t.Fatalf("%d SLOs of the former kinds in the example, want 6", len(kept))
	}
	want, err := json.Marshal(legacy)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("SLO hash bytes changed:\n got %s\nwant %s", got, want)
	}
}
