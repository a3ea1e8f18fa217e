package proctest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// KindTraffic is two hours from T0 of spans of two tenants, a canary and a
// baseline variant each, with TTFT, TPOT, scores and some errors, and
// corrections: every 20th span corrected by trace id, plus corrections of
// traces never seen. Every kind emits every metric it lists on it.
func KindTraffic() []Event {
	r := rand.New(rand.NewPCG(1, 2))
	var evs []Event
	routes := []string{"/chat", "/search", "/embed", "/summarise"}
	n := 0
	for t := T0; t < T0+2*Hour; t += Second / 4 {
		n++
		v := "baseline"
		if n%3 == 0 {
			v = "canary"
		}
		key := schemas.Key{Tenant: "t" + strconv.Itoa(n%2), Service: "chat", Model: "m", Variant: v}
		s := NewSpan(r, key, routes[n%len(routes)], t, Lognormal(r, 800, 0.5))
		s.TTFTMs, s.Confidence, s.Alignment = s.DurationMs/4, 0.5+0.4*r.Float64(), 0.9-0.2*float64(t-T0)/float64(2*Hour)
		s.OutputTokens, s.TPOTMs = 100, s.DurationMs/100
		s.Has |= schemas.HasTTFT | schemas.HasTPOT | schemas.HasConfidence | schemas.HasAlignment | schemas.HasOutputTokens
		s.Error = n%50 == 0
		sp := s
		evs = append(evs, Event{T: t, Span: &sp})
		if n%20 == 0 {
			evs = append(evs, Event{T: t + Second, Correction: &schemas.Correction{
				EventID: "c" + strconv.Itoa(n), TimeUnixNano: t + Second, Tenant: key.Tenant, TraceID: s.TraceID, Kind: schemas.KindReject}})
		}
		if n%97 == 0 {
			c := &schemas.Correction{EventID: "u" + strconv.Itoa(n), TimeUnixNano: t, Tenant: key.Tenant, SessionID: "nowhere", Model: "m", Variant: v, Kind: schemas.KindReject}
			FillRandom(r, c.TraceID[:])
			evs = append(evs, Event{T: t, Correction: c})
		}
	}
	SortEvents(evs)
	return evs
}

// CheckMetrics drives a processor of kind k built from cfg over evs
// (KindTraffic) and fails unless every verdict names the kind and a
// metric of k.Metrics(cfg), and every metric of k.Metrics(cfg) is
// emitted.
func CheckMetrics(t *testing.T, k processors.Kind, cfg processors.Config, evs []Event) {
	t.Helper()
	p, err := k.New(processors.Meta{SLO: "s", ConfigVersion: "v"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := k.Metrics(cfg)
	got := map[string]int{}
	for _, vd := range DriveEvents(t, p, evs, T0, T0+2*Hour) {
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
}

// CheckStateShape fails unless every field of k's Config changes
// k.StateShape when perturbed, but those named in judging (the fields that
// only judge what the windows hold: editing them keeps an SLO's state),
// which must not. A field added to a Config without a decision fails it.
func CheckStateShape(t *testing.T, k processors.Kind, judging ...string) {
	t.Helper()
	base := fmt.Sprintf("%#v", k.Default().StateShape())
	typ := reflect.TypeOf(k.Default()).Elem()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		cfg := k.Default()
		if !perturb(reflect.ValueOf(cfg).Elem().Field(i)) {
			t.Errorf("%s.%s: cannot perturb a %s", k.Name, f.Name, f.Type)
			continue
		}
		changed := fmt.Sprintf("%#v", cfg.StateShape()) != base
		judge := slices.Contains(judging, f.Name)
		switch {
		case judge && changed:
			t.Errorf("%s.%s judges only, yet changes the state shape", k.Name, f.Name)
		case !judge && !changed:
			t.Errorf("%s.%s does not change the state shape: add it to the kind's state shape (it shapes the windows) or to judging (it only judges them)", k.Name, f.Name)
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
	case reflect.Pointer:
		// nil (unset) becomes a pointer to the zero value, set becomes
		// another value.
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
			return true
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(v.Elem())
		v.Set(n)
		return perturb(n.Elem())
	default:
		return false
	}
	return true
}
