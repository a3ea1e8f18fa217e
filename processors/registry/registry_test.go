package registry_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/processors/registry"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"github.com/fusebox-dev/fusebox/schemas"
)

func TestKindsAreDistinctAndComplete(t *testing.T) {
	want := []string{"tail", "drift", "decay", "scaling", "corrections", "burnrate"}
	if got := registry.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v (the order is part of the config hash)", got, want)
	}
	for _, k := range registry.Kinds() {
		c := complete(k.Default())
		if err := c.Validate(); err != nil {
			t.Errorf("%s: defaults (with the budgets set) do not validate: %v", k.Name, err)
		}
		if k.Default() == c {
			t.Errorf("%s: Default returns the same pointer twice", k.Name)
		}
		if got, ok := registry.Of(c); !ok || got.Name != k.Name {
			t.Errorf("Of(%T) = %q, %v, want %q", c, got.Name, ok, k.Name)
		}
		if got, ok := registry.Lookup(k.Name); !ok || got.Name != k.Name {
			t.Errorf("Lookup(%q) = %q, %v", k.Name, got.Name, ok)
		}
		if k.Every(c) <= 0 {
			t.Errorf("%s: Every = %v", k.Name, k.Every(c))
		}
		if len(k.Metrics(c)) == 0 || k.Summary(c) == "" {
			t.Errorf("%s: no metrics (%v) or no summary (%q)", k.Name, k.Metrics(c), k.Summary(c))
		}
	}
	if _, ok := registry.Lookup("rollup"); ok {
		t.Error("rollup is not an SLO kind")
	}
}

// complete sets the fields that have no default (the budgets).
func complete(c registry.Config) registry.Config {
	switch c := c.(type) {
	case *tail.Config:
		c.Budget = 3000
	case *scaling.Config:
		c.StdDevBudgetMs = 100
	}
	return c
}

// TestNewRejectsAnInvalidConfig: New validates, through the kind's own
// type (every kind's Config has an Every field; 0 is invalid).
func TestNewRejectsAnInvalidConfig(t *testing.T) {
	for _, k := range registry.Kinds() {
		c := complete(k.Default())
		reflect.ValueOf(c).Elem().FieldByName("Every").SetInt(0)
		if _, err := k.New(processors.Meta{SLO: "x"}, c); err == nil {
			t.Errorf("%s: New accepted every: 0", k.Name)
		}
		if k.Every(c) != 0 {
			t.Errorf("%s: Every does not read the configuration", k.Name)
		}
	}
}

// TestMetricsListWhatTheProcessorEmits drives every kind (and the
// configurations that change its metrics) over two hours of traffic with
// canary and baseline variants, errors, scores and corrections (joined and
// not), and checks that every verdict names the kind and a metric of
// Metrics, and that every metric of Metrics was emitted.
func TestMetricsListWhatTheProcessorEmits(t *testing.T) {
	type variant struct {
		name string
		cfg  func(registry.Config)
	}
	variants := map[string][]variant{
		"drift":    {{"reference", nil}, {"canary", func(c registry.Config) { c.(*drift.Config).Mode = drift.ModeCanary }}},
		"burnrate": {{"default", nil}, {"page only", func(c registry.Config) { c.(*burnrate.Config).Ticket = nil }}},
		"tail": {{"default", nil}, {"ttft p99", func(c registry.Config) {
			c.(*tail.Config).Metric, c.(*tail.Config).P = processors.MetricTTFT, 0.99
		}}},
	}
	evs := traffic()
	for _, k := range registry.Kinds() {
		vs := variants[k.Name]
		if vs == nil {
			vs = []variant{{"default", nil}}
		}
		for _, v := range vs {
			t.Run(k.Name+"/"+v.name, func(t *testing.T) {
				c := complete(k.Default())
				if v.cfg != nil {
					v.cfg(c)
				}
				p, err := k.New(processors.Meta{SLO: "s", ConfigVersion: "v"}, c)
				if err != nil {
					t.Fatal(err)
				}
				want := k.Metrics(c)
				got := map[string]int{}
				for _, vd := range proctest.DriveEvents(t, p, evs, proctest.T0, proctest.T0+2*proctest.Hour) {
					if vd.Processor != k.Name {
						t.Fatalf("verdict processor %q, want %q", vd.Processor, k.Name)
					}
					if !slices.Contains(want, vd.Metric) {
						t.Fatalf("verdict metric %q is not in Metrics = %v", vd.Metric, want)
					}
					got[vd.Metric]++
				}
				for _, m := range want {
					if got[m] == 0 {
						t.Errorf("Metrics lists %q but no verdict carries it (got %v)", m, got)
					}
				}
			})
		}
	}
}

// traffic is two hours of spans of two tenants, a canary and a baseline
// variant each, with TTFT, scores and some errors, and corrections: every
// 20th span corrected by trace id, plus corrections of traces never seen.
func traffic() []proctest.Event {
	r := rand.New(rand.NewPCG(1, 2))
	var evs []proctest.Event
	routes := []string{"/chat", "/search", "/embed", "/summarise"}
	n := 0
	for t := proctest.T0; t < proctest.T0+2*proctest.Hour; t += proctest.Second / 4 {
		n++
		v := "baseline"
		if n%3 == 0 {
			v = "canary"
		}
		key := schemas.Key{Tenant: "t" + strconv.Itoa(n%2), Service: "chat", Model: "m", Variant: v}
		s := proctest.NewSpan(r, key, routes[n%len(routes)], t, proctest.Lognormal(r, 800, 0.5))
		s.TTFTMs, s.Confidence, s.Alignment = s.DurationMs/4, 0.5+0.4*r.Float64(), 0.9-0.2*float64(t-proctest.T0)/float64(2*proctest.Hour)
		s.OutputTokens, s.TPOTMs = 100, s.DurationMs/100
		s.Has |= schemas.HasTTFT | schemas.HasTPOT | schemas.HasConfidence | schemas.HasAlignment | schemas.HasOutputTokens
		s.Error = n%50 == 0
		sp := s
		evs = append(evs, proctest.Event{T: t, Span: &sp})
		if n%20 == 0 {
			evs = append(evs, proctest.Event{T: t + proctest.Second, Correction: &schemas.Correction{
				EventID: "c" + strconv.Itoa(n), TimeUnixNano: t + proctest.Second, Tenant: key.Tenant, TraceID: s.TraceID, Kind: schemas.KindReject}})
		}
		if n%97 == 0 {
			c := &schemas.Correction{EventID: "u" + strconv.Itoa(n), TimeUnixNano: t, Tenant: key.Tenant, SessionID: "nowhere", Model: "m", Variant: v, Kind: schemas.KindReject}
			proctest.FillRandom(r, c.TraceID[:])
			evs = append(evs, proctest.Event{T: t, Correction: c})
		}
	}
	proctest.SortEvents(evs)
	return evs
}

// TestEveryKindHasAStateShape: a kind added without a window shape would
// restore state across any edit.
func TestEveryKindHasAStateShape(t *testing.T) {
	for _, k := range registry.Kinds() {
		if k.StateShape == nil || k.StateShape(k.Default()) == nil {
			t.Errorf("kind %s has no state shape (add it to windowShape)", k.Name)
		}
	}
}

// judging lists, per kind, the Config fields that only judge what the
// windows hold: editing them keeps an SLO's state. Every other field must
// change the kind's StateShape (a field added to a Config without a
// decision here fails the test).
var judging = map[string][]string{
	"tail":        {"P", "Budget", "ThresholdQuantile", "MinExceedances", "MinSamples"},
	"drift":       {"Alpha", "Consecutive", "MinEffect", "MinSamples"},
	"decay":       {"Limit", "Alpha", "MinSamples", "MinCoverage", "TheilSenMaxPoints"},
	"corrections": {"MaxRate", "Alpha", "MinEffect", "MinResponses"},
	"scaling":     {"EntropyHigh", "EntropyLow", "StdDevBudgetMs", "ScaleInAfter", "MinSamples"},
	"burnrate":    {"Target", "MinEvents", "MinBadEvents", "Confidence", "CUSUMFactor", "CUSUMThreshold"},
}

func TestStateShapeSeparatesWindowsFromJudging(t *testing.T) {
	for _, k := range registry.Kinds() {
		base := fmt.Sprintf("%#v", k.StateShape(k.Default()))
		typ := reflect.TypeOf(k.Default()).Elem()
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			cfg := k.Default()
			if !perturb(reflect.ValueOf(cfg).Elem().Field(i)) {
				t.Errorf("%s.%s: cannot perturb a %s", k.Name, f.Name, f.Type)
				continue
			}
			changed := fmt.Sprintf("%#v", k.StateShape(cfg)) != base
			judge := slices.Contains(judging[k.Name], f.Name)
			switch {
			case judge && changed:
				t.Errorf("%s.%s judges only, yet changes the state shape", k.Name, f.Name)
			case !judge && !changed:
				t.Errorf("%s.%s does not change the state shape: add it to windowShape (it shapes the windows) or to judging (it only judges them)", k.Name, f.Name)
			}
		}
	}
}

// perturb changes v to another value of its type.
func perturb(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Float64:
		v.SetFloat(v.Float()*2 + 0.5)
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
			if v.Type().Elem().Kind() == reflect.Struct {
				perturb(v.Index(0).Field(0))
			} else {
				perturb(v.Index(0))
			}
			return true
		}
		e := v.Index(0)
		if e.Kind() == reflect.Struct {
			return perturb(e.Field(0))
		}
		return perturb(e)
	default:
		return false
	}
	return true
}
