package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestCalibrateCommand is the SRE: a first SLO file written from
// docs/configuration.md's minimal file (a 2.5 s budget over every call, errors included; the
// default 0.999 objective) on traffic with 0.5% provider failures, a third
// of them 60 s timeouts. calibrate reads the recorded OTLP/JSON, writes a
// file that loads, and shows that the proposed file trips nothing on this
// clean traffic while the current one does.
func TestCalibrateCommand(t *testing.T) {
	dir := t.TempDir()
	sc := traffic.Demo()
	sc.Incidents, sc.Rate, sc.ErrorRate, sc.Seed = nil, 40, 0.005, 11
	g, err := traffic.New(sc, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var file []byte
	for g.Offset() < 90*time.Minute {
		b := g.Next(2 * time.Second)
		for i := range b.Spans {
			if s := &b.Spans[i]; s.Error && s.ErrorType == "timeout" {
				s.StartUnixNano = s.EndUnixNano - int64(60*time.Second)
				s.Derive()
			}
		}
		if len(b.Spans) > 0 {
			file = append(schemas.EncodeOTLPJSON(file, b.Spans, schemas.DefaultAttributeNames()), '\n')
		}
	}
	file = append(file, "not json\n"...) // a bad line is skipped and named, not fatal
	spans := filepath.Join(dir, "spans.jsonl")
	current := filepath.Join(dir, "current.yaml")
	out := filepath.Join(dir, "proposed.yaml")
	must(t, os.WriteFile(spans, file, 0o644))
	must(t, os.WriteFile(current, []byte(`slos:
  - name: chat-latency
    tail: {metric: duration_ms, p: 0.999, budget: 2500, include_errors: true}
  - name: availability
    burnrate: {target: 0.999}
breaker:
  rules:
    - {processor: tail, action: trip}
    - {processor: burnrate, metric: burn_rate_page, action: trip}
`), 0o644))
	code, stdout, stderr := runCmd(t, "calibrate", "--spans", spans, "--config", current, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	t.Log(stdout)
	if !strings.Contains(stderr, "spans.jsonl:") || !strings.Contains(stdout, "(1 records skipped)") {
		t.Errorf("the bad line is not reported:\n%s\n%s", stdout, stderr)
	}
	if _, err := config.Load(out); err != nil {
		t.Fatalf("proposed file does not load: %v", err)
	}
	proposed, currentPart, ok := strings.Cut(stdout, "what "+current+" would have done")
	if !ok {
		t.Fatalf("no replay of the current file:\n%s", stdout)
	}
	trips := func(part, slo string) string {
		for _, l := range strings.Split(part, "\n") {
			if f := strings.Fields(l); len(f) == 7 && f[0] == slo {
				return f[6]
			}
		}
		t.Fatalf("no line for %s in:\n%s", slo, part)
		return ""
	}
	if trips(currentPart, "chat-latency") == "0" {
		t.Errorf("the current file's 2.5 s budget over the timeouts did not trip:\n%s", currentPart)
	}
	for _, l := range strings.Split(proposed, "\n") {
		if f := strings.Fields(l); len(f) == 7 && (f[1] == "tail" || f[1] == "burnrate" || f[1] == "drift") && f[6] != "0" {
			t.Errorf("proposed SLO trips on clean traffic: %s", l)
		}
	}
	if code, _, _ := runCmd(t, "calibrate", "--spans", spans, "--margin", "-1"); code != exitUsage {
		t.Errorf("calibrate --margin -1: exit %d, want %d", code, exitUsage)
	}
}

// TestCalibrateFromTopics: with no --spans, calibrate reads the last hour
// of the span topic (OTLP protobuf, 3 partitions; a bad record among them)
// and the correction topic from a real broker, up to the end offsets, and
// proposes a file from it — the same file as from the same spans in a
// file. A record older than --last is not read.
func TestCalibrateFromTopics(t *testing.T) {
	k := testharness.StartKafka(t)
	k.CreateTopic(t, "otlp_spans", 3, nil)
	k.CreateTopic(t, "fusebox.corrections", 1, nil)
	sc := traffic.Demo()
	sc.Incidents, sc.Rate, sc.Seed = nil, 30, 12
	g, err := traffic.New(sc, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	var file []byte
	nCorr := 0
	now := time.Now()
	recs = append(recs, &kgo.Record{Topic: "otlp_spans", Partition: 0, Value: []byte("old"), Timestamp: now.Add(-3 * time.Hour)})
	for g.Offset() < 40*time.Minute {
		b := g.Next(5 * time.Second)
		if len(b.Spans) > 0 {
			recs = append(recs, &kgo.Record{Topic: "otlp_spans", Partition: int32(len(recs) % 3), Timestamp: now,
				Value: schemas.EncodeOTLPProto(nil, b.Spans, schemas.DefaultAttributeNames())})
			file = append(schemas.EncodeOTLPJSON(file, b.Spans, schemas.DefaultAttributeNames()), '\n')
		}
		for _, c := range b.Corrections {
			v, err := schemas.EncodeCorrection(c)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, &kgo.Record{Topic: "fusebox.corrections", Partition: 0, Value: v, Timestamp: now})
			nCorr++
		}
	}
	recs = append(recs, &kgo.Record{Topic: "otlp_spans", Partition: 1, Value: []byte("\x0a\xff"), Timestamp: now})
	for _, r := range recs {
		r.Key = nil
	}
	k.Produce(t, recs...)
	dir := t.TempDir()
	fromTopics, fromFile := filepath.Join(dir, "topics.yaml"), filepath.Join(dir, "file.yaml")
	code, stdout, stderr := runCmd(t, "calibrate", "--brokers", strings.Join(k.Brokers, ","), "--last", "1h", "--out", fromTopics, "--timeout", "1m")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, " corrections (1 records skipped)") || !strings.Contains(stderr, "skipped: otlp_spans[") {
		t.Errorf("the bad record is not reported:\n%s\n%s", stdout, stderr)
	}
	if want := fmt.Sprintf(", %d corrections", nCorr); !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
	if !strings.Contains(stdout, "user-corrections") {
		t.Errorf("no corrections SLO proposed:\n%s", stdout)
	}
	spans := filepath.Join(dir, "spans.jsonl")
	must(t, os.WriteFile(spans, file, 0o644))
	if code, stdout, stderr := runCmd(t, "calibrate", "--spans", spans, "--out", fromFile); code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	a, _ := os.ReadFile(fromTopics)
	b, _ := os.ReadFile(fromFile)
	// The file run had no corrections: compare the tail and burn-rate SLOs.
	cut := func(s []byte) string {
		x, _, _ := strings.Cut(string(s), "  # drift:")
		_, y, _ := strings.Cut(x, "slos:")
		return y
	}
	if cut(a) != cut(b) {
		t.Errorf("topics and file give different proposals:\n%s\n---\n%s", a, b)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
