package observe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// lines decodes each JSON line and returns the objects and their raw text.
func lines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		if n := strings.Count(l, `,"component":`); n > 1 { // top level: after msg, never first
			t.Errorf("%d component keys in %s", n, l)
		}
		out = append(out, m)
	}
	return out
}

func TestLoggerWritesJSONWithComponent(t *testing.T) {
	var b bytes.Buffer
	l, err := NewLogger(&b, "info")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("started", "brokers", 1)
	ing := l.With("component", "ingest", "group", "fusebox.router")
	ing.Warn("rebalance", "partitions", 6)
	ing.With("component", "ingest.dlq").Error("dlq write failed")
	l.Info("one-off", "component", "cli")
	l.WithGroup("req").With("component", "inner").Info("grouped")
	l.Debug("dropped below info")

	got := lines(t, &b)
	if len(got) != 5 {
		t.Fatalf("%d lines, want 5 (debug dropped):\n%s", len(got), b.String())
	}
	for _, m := range got {
		for _, k := range []string{"time", "level", "msg", "component"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %v lacks %q", m, k)
			}
		}
		ts, _ := m["time"].(string)
		if tm, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "Z") || tm.IsZero() {
			t.Errorf("time %q: want UTC RFC 3339 (%v)", ts, err)
		}
	}
	for i, want := range []struct{ level, msg, component string }{
		{"INFO", "started", "fusebox"},
		{"WARN", "rebalance", "ingest"},
		{"ERROR", "dlq write failed", "ingest.dlq"},
		{"INFO", "one-off", "cli"},
		{"INFO", "grouped", "fusebox"},
	} {
		m := got[i]
		if m["level"] != want.level || m["msg"] != want.msg || m["component"] != want.component {
			t.Errorf("line %d = %v, want level %s msg %q component %s", i, m, want.level, want.msg, want.component)
		}
	}
	if got[1]["group"] != "fusebox.router" || got[1]["partitions"] != float64(6) || got[2]["group"] != "fusebox.router" {
		t.Errorf("attributes lost: %v / %v", got[1], got[2])
	}
	if req, _ := got[4]["req"].(map[string]any); req["component"] != "inner" {
		t.Errorf("a component inside a group is an ordinary attribute: %v", got[4])
	}
}

func TestLoggerLevels(t *testing.T) {
	var b bytes.Buffer
	l, err := NewLogger(&b, "WARNING")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("no")
	l.Warn("yes")
	if got := lines(t, &b); len(got) != 1 || got[0]["msg"] != "yes" {
		t.Errorf("level warning: %v", got)
	}
	if _, err := NewLogger(&b, "loud"); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Errorf("bad level: %v, want an error naming it", err)
	}
}

func TestLoggerTextFormat(t *testing.T) {
	var b bytes.Buffer
	l, err := NewFormatLogger(&b, "info", FormatText)
	if err != nil {
		t.Fatal(err)
	}
	l.With("component", "ingest").Info("hello", "topic", "otlp_spans")
	l.Debug("dropped")
	out := b.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=INFO msg=hello component=ingest topic=otlp_spans") ||
		!strings.HasPrefix(out, "time=") || strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("text line: %q", out)
	}
	if strings.Count(out, "component=") != 1 {
		t.Errorf("component twice: %q", out)
	}
	ts := strings.TrimPrefix(strings.Fields(out)[0], "time=")
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "Z") {
		t.Errorf("time %q: want UTC RFC 3339 (%v)", ts, err)
	}
	if _, err := NewFormatLogger(&b, "info", "xml"); err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Errorf("bad format: %v, want an error naming it", err)
	}
}
