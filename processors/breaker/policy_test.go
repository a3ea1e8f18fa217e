package breaker

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fusebox-dev/fusebox/schemas"
)

// fieldsOf lists the Field of every FieldError joined in err.
func fieldsOf(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var fe *schemas.FieldError
		if errors.As(e, &fe) {
			out = append(out, fe.Field)
		}
	}
	walk(err)
	return out
}

func TestDefaultPolicyIsValid(t *testing.T) {
	p := DefaultPolicy()
	if err := p.Validate(); err != nil {
		t.Fatalf("DefaultPolicy: %v", err)
	}
	if p.K != 3 || p.N != 10 || p.CoolDown != 5*time.Minute || p.BackoffFactor != 2 || p.MaxCoolDown != time.Hour || p.CloseAfter != 3 {
		t.Fatalf("defaults changed: %+v", p)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Policy)
		field string
	}{
		{"unknown dimension", func(p *Policy) { p.Target = []string{"tenant", "region"} }, "target[1]"},
		{"repeated dimension", func(p *Policy) { p.Target = []string{"model", "model"} }, "target[1]"},
		{"k zero", func(p *Policy) { p.K = 0 }, "k"},
		{"n below k", func(p *Policy) { p.N = 2 }, "n"},
		{"n above 64", func(p *Policy) { p.N = 65 }, "n"},
		{"cool_down zero", func(p *Policy) { p.CoolDown = 0 }, "cool_down"},
		{"backoff below 1", func(p *Policy) { p.BackoffFactor = 0.5 }, "backoff_factor"},
		{"cap below cool_down", func(p *Policy) { p.MaxCoolDown = time.Minute }, "max_cool_down"},
		{"negative flap window", func(p *Policy) { p.FlapWindow = -1 }, "flap_window"},
		{"close_after zero", func(p *Policy) { p.CloseAfter = 0 }, "close_after"},
		{"half_open_fraction zero", func(p *Policy) { p.HalfOpenFraction = 0 }, "half_open_fraction"},
		{"ttl zero", func(p *Policy) { p.CommandTTL = 0 }, "command_ttl"},
		{"evict_after not above cap", func(p *Policy) { p.EvictAfter = time.Hour }, "evict_after"},
		{"max_targets zero", func(p *Policy) { p.MaxTargets = 0 }, "max_targets"},
		{"rule without processor", func(p *Policy) { p.Rules[1].Processor = "" }, "rules[1].processor"},
		{"rule action close", func(p *Policy) { p.Rules[0].Action = schemas.ActionClose }, "rules[0].action"},
		{"rule level 3", func(p *Policy) { p.Rules[0].Level = 3 }, "rules[0].level"},
		{"degrade without fallback", func(p *Policy) { p.Rules[0].Action = schemas.ActionDegrade }, "rules[0].fallback"},
		{"fallback on trip", func(p *Policy) { p.Rules[0].Fallback = "x" }, "rules[0].fallback"},
		{"throttle without fraction", func(p *Policy) { p.Rules[0].Action = schemas.ActionThrottle }, "rules[0].throttle_fraction"},
		{"fraction on trip", func(p *Policy) { p.Rules[0].ThrottleFraction = 0.5 }, "rules[0].throttle_fraction"},
		{"rule k above n", func(p *Policy) { p.Rules[2].K = 11 }, "rules[2].n"},
		{"rule target", func(p *Policy) { p.Rules[2].Target = []string{"zone"} }, "rules[2].target[0]"},
		{"duplicate rule", func(p *Policy) { p.Rules = append(p.Rules, p.Rules[0]) }, "rules[3].processor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPolicy()
			tc.edit(&p)
			err := p.Validate()
			got := fieldsOf(err)
			if len(got) != 1 || got[0] != tc.field {
				t.Fatalf("fields %q (%v), want [%s]", got, err, tc.field)
			}
			if _, err := New(p); err == nil {
				t.Fatalf("New accepted an invalid policy")
			}
		})
	}
}

func TestPolicyFromYAML(t *testing.T) {
	src := `
target: [service, model, variant]
k: 2
cool_down: 90s
max_cool_down: 30m
rules:
  - processor: tail
    slo: chat-latency
    action: degrade
    fallback: small-model
  - processor: corrections
    action: throttle
    throttle_fraction: 0.25
    k: 1
    n: 1
`
	p := DefaultPolicy()
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	want := DefaultPolicy()
	want.Target = []string{"service", "model", "variant"}
	want.K = 2
	want.CoolDown = 90 * time.Second
	want.MaxCoolDown = 30 * time.Minute
	want.Rules = []Rule{
		{Processor: "tail", SLO: "chat-latency", Action: schemas.ActionDegrade, Fallback: "small-model"},
		{Processor: "corrections", Action: schemas.ActionThrottle, ThrottleFraction: 0.25, K: 1, N: 1},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", p, want)
	}
}
