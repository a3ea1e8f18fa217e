package registry_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/processors/registry"
)

func TestKindsAreDistinctAndComplete(t *testing.T) {
	// The order is the order of the SLO sections in error messages: a
	// new kind goes at the end.
	want := []string{"tail", "drift", "decay", "scaling", "corrections", "burnrate"}
	if got := registry.Names(); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("Names() = %v, want %v first", got, want)
	}
	if got := registry.Names(); len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
		t.Fatalf("Names() = %v: two kinds of one name", got)
	}
	for _, k := range registry.Kinds() {
		c := k.Sample()
		if err := c.Validate(); err != nil {
			t.Errorf("%s: Sample does not validate: %v", k.Name, err)
		}
		if k.Default() == k.Default() || k.Sample() == c {
			t.Errorf("%s: Default or Sample returns the same pointer twice", k.Name)
		}
		if reflect.TypeOf(k.Default()) != reflect.TypeOf(c) {
			t.Errorf("%s: Sample is a %T, Default a %T", k.Name, c, k.Default())
		}
		if got, ok := registry.Of(c); !ok || got.Name != k.Name {
			t.Errorf("Of(%T) = %q, %v, want %q", c, got.Name, ok, k.Name)
		}
		if got, ok := registry.Lookup(k.Name); !ok || got.Name != k.Name {
			t.Errorf("Lookup(%q) = %q, %v", k.Name, got.Name, ok)
		}
		if c.Interval() <= 0 {
			t.Errorf("%s: Every = %v", k.Name, c.Interval())
		}
		if len(k.Metrics(c)) == 0 || c.Summary() == "" {
			t.Errorf("%s: no metrics (%v) or no summary (%q)", k.Name, k.Metrics(c), c.Summary())
		}
		if c.StateShape() == nil {
			t.Errorf("%s: no state shape", k.Name)
		}
		if err := k.CheckDimensions(c, []string{"tenant", "service", "model", "variant"}); err != nil {
			t.Errorf("%s: Sample does not fit the default key dimensions: %v", k.Name, err)
		}
	}
	if _, ok := registry.Lookup("rollup"); ok {
		t.Error("rollup is not an SLO kind")
	}
}

// TestWithExtendsACopy: With appends to a copy; Default, Kinds and the
// package-level lookups keep the shipped list.
func TestWithExtendsACopy(t *testing.T) {
	k := registry.Kinds()[0]
	k.Name = "extra"
	l := registry.With(k)
	n := len(registry.Kinds())
	if got := l.Names(); len(got) != n+1 || got[n] != "extra" {
		t.Fatalf("With: %v", got)
	}
	if _, ok := registry.Lookup("extra"); ok || registry.Default().Len() != n {
		t.Fatal("With changed the shipped list")
	}
	ks := l.Kinds()
	ks[0].Name = "changed"
	if l.Names()[0] != "tail" {
		t.Fatal("List.Kinds is not a copy")
	}
	defer func() {
		if recover() == nil {
			t.Error("With accepted a second kind named tail")
		}
	}()
	registry.With(registry.Kinds()[0])
}

// TestNewRejectsAnInvalidConfig: New validates, through the kind's own
// type (every kind's Config has an Every field; 0 is invalid).
func TestNewRejectsAnInvalidConfig(t *testing.T) {
	for _, k := range registry.Kinds() {
		c := k.Sample()
		reflect.ValueOf(c).Elem().FieldByName("Every").SetInt(0)
		if _, err := k.New(processors.Meta{SLO: "x"}, c); err == nil {
			t.Errorf("%s: New accepted every: 0", k.Name)
		}
		if c.Interval() != 0 {
			t.Errorf("%s: Every does not read the configuration", k.Name)
		}
	}
}

// TestMetricsListWhatTheProcessorEmits drives every kind's Sample over
// two hours of traffic with canary and baseline variants, errors, scores
// and corrections (joined and not), and checks that every verdict names
// the kind and a metric of Metrics, and that every metric of Metrics was
// emitted. The configurations that change a kind's metrics are checked in
// its package (TestKindMetrics).
func TestMetricsListWhatTheProcessorEmits(t *testing.T) {
	evs := proctest.KindTraffic()
	for _, k := range registry.Kinds() {
		t.Run(k.Name, func(t *testing.T) { proctest.CheckMetrics(t, k, k.Sample(), evs) })
	}
}
