package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestCalibrateCommand is the SRE: a first SLO file written from
// the README (a 2.5 s budget over every call, errors included; the
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
	if code, _, _ := runCmd(t, "calibrate"); code != exitUsage {
		t.Errorf("calibrate without --spans: exit %d, want %d", code, exitUsage)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
