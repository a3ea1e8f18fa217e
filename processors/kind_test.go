package processors_test

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

type testConfig struct{ Every time.Duration }

func (c *testConfig) Validate() error { return nil }

type otherConfig struct{}

func (*otherConfig) Validate() error { return nil }

type nop struct{ processors.Processor }

func funcs() processors.KindFuncs[testConfig, *nop] {
	return processors.KindFuncs[testConfig, *nop]{
		Default:    func() testConfig { return testConfig{Every: time.Minute} },
		Sample:     func() testConfig { return testConfig{Every: time.Second} },
		New:        func(processors.Meta, testConfig) (*nop, error) { return &nop{}, nil },
		Every:      func(c *testConfig) time.Duration { return c.Every },
		Metrics:    func(*testConfig) []string { return []string{"b", "a"} },
		Summary:    func(*testConfig) string { return "s" },
		StateShape: func(c *testConfig) any { return []any{c.Every} },
	}
}

// TestNewKindAdapts: the Kind's functions take the kind's *Config, sort
// the metrics, default CheckDimensions to nothing to check, and panic on
// another kind's Config; NewKind panics on a missing function.
func TestNewKindAdapts(t *testing.T) {
	k := processors.NewKind("test", funcs())
	c := k.Default()
	if k.Every(c) != time.Minute || k.Every(k.Sample()) != time.Second || k.Summary(c) != "s" {
		t.Fatalf("Every %v, Sample's %v, Summary %q", k.Every(c), k.Every(k.Sample()), k.Summary(c))
	}
	if m := k.Metrics(c); len(m) != 2 || m[0] != "a" {
		t.Errorf("Metrics not sorted: %v", m)
	}
	if err := k.CheckDimensions(c, schemas.Dimensions); err != nil {
		t.Errorf("CheckDimensions: %v", err)
	}
	if p, err := k.New(processors.Meta{}, c); err != nil || p == nil {
		t.Errorf("New: %v, %v", p, err)
	}
	mustPanic(t, "another kind's Config", func() { k.Every(&otherConfig{}) })
	f := funcs()
	f.StateShape = nil
	mustPanic(t, "no StateShape", func() { processors.NewKind("test", f) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}
