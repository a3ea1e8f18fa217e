package breaker

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

const (
	sec    = proctest.Second
	minute = proctest.Minute
	// t0 is an arbitrary evaluation time (2026-01-01T00:00:00Z).
	t0 = proctest.T0
)

var keyA = schemas.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "canary"}

// at is t0 plus m minutes.
func at(m float64) int64 { return t0 + int64(m*float64(minute)) }

// mkVerdict builds a valid verdict whose window ends at end.
func mkVerdict(processor, slo, metric string, key schemas.Key, end int64, st schemas.Status) schemas.Verdict {
	v := schemas.Verdict{
		ID:        schemas.VerdictID(processor, slo, metric, key, end, "cfg1"),
		Processor: processor, SLO: slo, Metric: metric, Key: key,
		WindowStartUnixNano: end - minute, WindowEndUnixNano: end,
		Value: 100, Threshold: 80, Status: st, ConfigVersion: "cfg1",
	}
	if st == schemas.StatusOK {
		v.Value = 50
	}
	return v
}

// tail builds a tail verdict for keyA.
func tail(m float64, st schemas.Status) schemas.Verdict {
	return mkVerdict("tail", "latency", "duration_ms", keyA, at(m), st)
}

func newBreaker(t testing.TB, p Policy) *Breaker {
	t.Helper()
	b, err := New(p)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// onlyRules is DefaultPolicy with the given rules.
func onlyRules(rs ...Rule) Policy {
	p := DefaultPolicy()
	p.Rules = rs
	return p
}

const (
	B = schemas.StatusBreach
	O = schemas.StatusOK
	W = schemas.StatusWarn
	I = schemas.StatusInsufficientData
)

// want describes an expected command; nil means none.
type want struct {
	action schemas.Action
	state  schemas.BreakerState
	level  int
}

func checkCmds(t *testing.T, step string, got []schemas.FuseCommand, w *want) {
	t.Helper()
	if w == nil {
		if len(got) != 0 {
			t.Fatalf("%s: got %d commands (first %s/%s), want none", step, len(got), got[0].Action, got[0].State)
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("%s: got %d commands, want 1 (%s/%s)", step, len(got), w.action, w.state)
	}
	c := got[0]
	if c.Action != w.action || c.State != w.state || c.Level != w.level {
		t.Fatalf("%s: got %s/%s level %d, want %s/%s level %d", step, c.Action, c.State, c.Level, w.action, w.state, w.level)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("%s: command does not validate: %v", step, err)
	}
}
