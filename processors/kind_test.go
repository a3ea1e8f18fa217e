package processors_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

type testConfig struct{ Every time.Duration }

func (c *testConfig) Validate() error         { return nil }
func (c *testConfig) Interval() time.Duration { return c.Every }
func (*testConfig) Metrics() []string         { return []string{"b", "a"} }
func (*testConfig) Summary() string           { return "s" }
func (c *testConfig) StateShape() any         { return []any{c.Every} }

func defaultTest() testConfig                           { return testConfig{Every: time.Minute} }
func sampleTest() testConfig                            { return testConfig{Every: time.Second} }
func newTest(processors.Meta, testConfig) (*nop, error) { return &nop{}, nil }

// checkedConfig is a testConfig that is a DimensionChecker.
type checkedConfig struct{ testConfig }

func (*checkedConfig) CheckDimensions(dims []string) error { return errors.New("no") }

func defaultChecked() checkedConfig                           { return checkedConfig{} }
func newChecked(processors.Meta, checkedConfig) (*nop, error) { return &nop{}, nil }

type otherConfig struct{ testConfig }

type nop struct{ processors.Processor }

// TestNewKindAdapts: the Kind's functions take the kind's *Config and
// call its methods, sort the metrics, call CheckDimensions only of a
// DimensionChecker, and panic on another kind's Config; NewKind panics on
// a missing function.
func TestNewKindAdapts(t *testing.T) {
	k := processors.NewKind("test", defaultTest, sampleTest, newTest)
	c := k.Default()
	if c.Interval() != time.Minute || k.Sample().Interval() != time.Second || c.Summary() != "s" {
		t.Fatalf("Every %v, Sample's %v, Summary %q", c.Interval(), k.Sample().Interval(), c.Summary())
	}
	if m := k.Metrics(c); len(m) != 2 || m[0] != "a" {
		t.Errorf("Metrics not sorted: %v", m)
	}
	if s := c.StateShape(); len(s.([]any)) != 1 {
		t.Errorf("StateShape %v", s)
	}
	if err := k.CheckDimensions(c, schemas.Dimensions); err != nil {
		t.Errorf("CheckDimensions: %v", err)
	}
	if p, err := k.New(processors.Meta{}, c); err != nil || p == nil {
		t.Errorf("New: %v, %v", p, err)
	}
	checked := processors.NewKind("checked", defaultChecked, defaultChecked, newChecked)
	if err := checked.CheckDimensions(checked.Default(), schemas.Dimensions); err == nil {
		t.Error("CheckDimensions of a DimensionChecker: not called")
	}
	mustPanic(t, "another kind's Config", func() { k.Metrics(&otherConfig{}) })
	mustPanic(t, "no sample", func() { processors.NewKind("test", defaultTest, nil, newTest) })
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
