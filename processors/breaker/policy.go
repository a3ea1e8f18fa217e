package breaker

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// The key dimensions a target can keep (see schemas.Dimensions).
const (
	DimTenant  = schemas.DimTenant
	DimService = schemas.DimService
	DimModel   = schemas.DimModel
	DimVariant = schemas.DimVariant
)

// Dimensions lists the key dimensions in key order.
var Dimensions = schemas.Dimensions

// MaxN is the longest k-of-n history a rule may keep.
const MaxN = 64

// Policy is the `breaker:` section of the SLO file. Decode the YAML over
// DefaultPolicy() so that omitted fields keep their defaults (a `rules:`
// list replaces the default rules). Durations are YAML strings such as
// "5m".
type Policy struct {
	// Target lists the key dimensions a target keeps (a subset of tenant,
	// service, model, variant); the others become schemas.Wildcard, so one
	// target gathers the verdicts of every key that differs only in them.
	// Default: all four (a target is a key). An empty list makes one global
	// target. A rule may override it.
	Target []string `yaml:"target"`
	// K and N: a rule trips its target when at least K of the last N
	// evaluations of one series (one processor, SLO, metric and key) were
	// breaches. Defaults 3 and 10; 1 <= K <= N <= 64. A rule may override
	// them.
	K int `yaml:"k"`
	N int `yaml:"n"`
	// CoolDown is how long a target stays open after its first trip before
	// it goes half-open. Default 5m.
	CoolDown time.Duration `yaml:"cool_down"`
	// BackoffFactor multiplies the cool-down on each further trip of the
	// same incident (a re-trip from half-open, an escalation, or a trip
	// within FlapWindow of the last close). Default 2; at least 1.
	BackoffFactor float64 `yaml:"backoff_factor"`
	// MaxCoolDown caps the backed-off cool-down. Default 1h.
	MaxCoolDown time.Duration `yaml:"max_cool_down"`
	// FlapWindow: a target that trips again within FlapWindow of closing
	// keeps its backoff step (the next cool-down is doubled again instead
	// of starting from CoolDown). Default 1h; 0 disables flap memory.
	FlapWindow time.Duration `yaml:"flap_window"`
	// CloseAfter is the number of healthy (ok) evaluations a half-open
	// target needs, in a row, to close. Default 3.
	CloseAfter int `yaml:"close_after"`
	// HalfOpenFraction is the share of requests a half-open target admits
	// to probe recovery (carried in the command's throttle_fraction).
	// Default 0.1; in (0, 1].
	HalfOpenFraction float64 `yaml:"half_open_fraction"`
	// CommandTTL is a command's lifetime: expires-at = issued-at + TTL.
	// While a target is open or half-open its command is re-issued (a
	// refresh, new version) once it is TTL/2 old, so a gateway's copy never
	// lapses while fusebox runs; if fusebox stops, gateways fall back to
	// normal within one TTL. Default 15m.
	CommandTTL time.Duration `yaml:"command_ttl"`
	// EvictAfter drops a target's state once it has had no breach, no
	// state change and (half-open) no starved probe verdict for this long.
	// Default 24h; must exceed MaxCoolDown and be at least FlapWindow.
	EvictAfter time.Duration `yaml:"evict_after"`
	// MaxTargets bounds the targets held; a breach for a new target beyond
	// it is dropped and counted (Stats.TargetOverflow). Default 100000.
	MaxTargets int `yaml:"max_targets"`
	// Rules map breaches to actions. A verdict is matched against every
	// rule; each matching rule keeps its own k-of-n history, so two rules
	// on the same signal make a ladder (e.g. degrade at 3 of 10, trip at 6
	// of 10). No rules: the breaker never issues a command.
	Rules []Rule `yaml:"rules"`
}

// Rule maps the breaches of one processor (optionally one SLO and one
// metric) to an action.
type Rule struct {
	// Processor is the verdict's processor (tail, drift, decay, scaling,
	// corrections, burnrate). Required.
	Processor string `yaml:"processor"`
	// SLO and Metric narrow the rule to one SLO name and one metric; empty
	// matches any.
	SLO    string `yaml:"slo"`
	Metric string `yaml:"metric"`
	// Action is trip, degrade, throttle, rollback or scale_out.
	Action schemas.Action `yaml:"action"`
	// Level overrides the action's level (0 keeps the default: trip 2;
	// degrade, throttle, rollback 1; scale_out 0). At most 2.
	Level int `yaml:"level"`
	// Fallback is the model to degrade to (required for degrade); for
	// rollback it may name the baseline variant; empty otherwise.
	Fallback string `yaml:"fallback"`
	// ThrottleFraction is the share of requests still admitted, for
	// throttle only; in (0, 1).
	ThrottleFraction float64 `yaml:"throttle_fraction"`
	// K, N and Target override the policy's (0 or an absent list keeps
	// the policy's).
	K      int      `yaml:"k"`
	N      int      `yaml:"n"`
	Target []string `yaml:"target"`
}

// DefaultPolicy returns the defaults listed on Policy with three rules: a
// tail breach trips its target (fail over), a burnrate breach trips it, a
// scaling breach asks for scale-out.
func DefaultPolicy() Policy {
	return Policy{
		Target:           []string{DimTenant, DimService, DimModel, DimVariant},
		K:                3,
		N:                10,
		CoolDown:         5 * time.Minute,
		BackoffFactor:    2,
		MaxCoolDown:      time.Hour,
		FlapWindow:       time.Hour,
		CloseAfter:       3,
		HalfOpenFraction: 0.1,
		CommandTTL:       15 * time.Minute,
		EvictAfter:       24 * time.Hour,
		MaxTargets:       100_000,
		Rules: []Rule{
			{Processor: "tail", Action: schemas.ActionTrip},
			{Processor: "burnrate", Action: schemas.ActionTrip},
			{Processor: "scaling", Action: schemas.ActionScaleOut},
		},
	}
}

// DefaultLevel is the level of an action when a rule does not set one.
func DefaultLevel(a schemas.Action) int {
	switch a {
	case schemas.ActionTrip:
		return 2
	case schemas.ActionDegrade, schemas.ActionThrottle, schemas.ActionRollback:
		return 1
	}
	return 0
}

// Validate reports every field that is wrong, each as a *schemas.FieldError
// whose Field is relative to the breaker section (e.g. "k",
// "rules[2].fallback"), joined with errors.Join.
func (p *Policy) Validate() error {
	var errs []error
	fail := func(bad bool, field, reason string) {
		if bad {
			errs = append(errs, &schemas.FieldError{Field: field, Reason: reason})
		}
	}
	checkDims(fail, "target", p.Target)
	checkKN(fail, "", p.K, p.N)
	fail(p.CoolDown <= 0, "cool_down", "must be a positive duration")
	fail(!(p.BackoffFactor >= 1) || math.IsInf(p.BackoffFactor, 0), "backoff_factor", "must be a finite number >= 1, got "+fmtFloat(p.BackoffFactor))
	fail(p.MaxCoolDown < p.CoolDown, "max_cool_down", "must be at least cool_down ("+p.CoolDown.String()+")")
	fail(p.FlapWindow < 0, "flap_window", "must not be negative")
	fail(p.CloseAfter < 1 || p.CloseAfter > MaxN, "close_after", "must be in [1, "+strconv.Itoa(MaxN)+"], got "+strconv.Itoa(p.CloseAfter))
	fail(!(p.HalfOpenFraction > 0 && p.HalfOpenFraction <= 1), "half_open_fraction", "must be in (0, 1], got "+fmtFloat(p.HalfOpenFraction))
	fail(p.CommandTTL < 2*time.Nanosecond, "command_ttl", "must be a positive duration")
	fail(p.EvictAfter <= p.MaxCoolDown, "evict_after", "must exceed max_cool_down ("+p.MaxCoolDown.String()+")")
	fail(p.EvictAfter < p.FlapWindow, "evict_after", "must be at least flap_window ("+p.FlapWindow.String()+")")
	fail(p.MaxTargets < 1, "max_targets", "must be positive")
	ids := map[string]int{}
	for i, r := range p.Rules {
		f := "rules[" + strconv.Itoa(i) + "]."
		fail(r.Processor == "", f+"processor", "required")
		switch r.Action {
		case schemas.ActionTrip, schemas.ActionDegrade, schemas.ActionThrottle, schemas.ActionRollback, schemas.ActionScaleOut:
		default:
			fail(true, f+"action", "must be trip, degrade, throttle, rollback or scale_out, got "+strconv.Quote(string(r.Action)))
		}
		fail(r.Level < 0 || r.Level > schemas.MaxFuseCommandLevel, f+"level", "must be in [0, 2] (0: the action's default), got "+strconv.Itoa(r.Level))
		switch r.Action {
		case schemas.ActionDegrade:
			fail(r.Fallback == "", f+"fallback", "required when action is degrade")
		case schemas.ActionRollback:
		default:
			fail(r.Fallback != "", f+"fallback", "only for degrade and rollback")
		}
		if r.Action == schemas.ActionThrottle {
			fail(!(r.ThrottleFraction > 0 && r.ThrottleFraction < 1), f+"throttle_fraction", "must be in (0, 1) when action is throttle, got "+fmtFloat(r.ThrottleFraction))
		} else {
			fail(r.ThrottleFraction != 0, f+"throttle_fraction", "only for throttle")
		}
		if r.K != 0 || r.N != 0 {
			k, n := r.K, r.N
			if k == 0 {
				k = p.K
			}
			if n == 0 {
				n = p.N
			}
			checkKN(fail, f, k, n)
		}
		if r.Target != nil {
			checkDims(fail, f+"target", r.Target)
		}
		id := r.id()
		if j, dup := ids[id]; dup {
			fail(true, f+"processor", "same processor, slo, metric and action as rules["+strconv.Itoa(j)+"]")
		}
		ids[id] = i
	}
	return errors.Join(errs...)
}

func checkDims(fail func(bool, string, string), field string, dims []string) {
	seen := map[string]bool{}
	for i, d := range dims {
		f := field + "[" + strconv.Itoa(i) + "]"
		switch d {
		case DimTenant, DimService, DimModel, DimVariant:
			fail(seen[d], f, "dimension "+d+" listed twice")
			seen[d] = true
		default:
			fail(true, f, "must be tenant, service, model or variant, got "+strconv.Quote(d))
		}
	}
}

func checkKN(fail func(bool, string, string), prefix string, k, n int) {
	fail(k < 1, prefix+"k", "must be at least 1, got "+strconv.Itoa(k))
	fail(n < k || n > MaxN, prefix+"n", "must be in [k, "+strconv.Itoa(MaxN)+"] (k = "+strconv.Itoa(k)+"), got "+strconv.Itoa(n))
}

// id names a rule across policy reloads and in snapshots.
func (r *Rule) id() string {
	return strings.Join([]string{r.Processor, r.SLO, r.Metric, string(r.Action)}, "\x1f")
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// rule is a Rule with the policy's defaults applied.
type rule struct {
	Rule
	id    string
	level int
	k, n  int
	keep  [4]bool // which key dimensions the target keeps
}

func compile(p *Policy) []rule {
	out := make([]rule, len(p.Rules))
	for i, r := range p.Rules {
		c := rule{Rule: r, id: r.id(), level: r.Level, k: r.K, n: r.N}
		if c.level == 0 {
			c.level = DefaultLevel(r.Action)
		}
		if c.k == 0 {
			c.k = p.K
		}
		if c.n == 0 {
			c.n = p.N
		}
		dims := p.Target
		if r.Target != nil {
			dims = r.Target
		}
		for _, d := range dims {
			for j, name := range Dimensions {
				if d == name {
					c.keep[j] = true
				}
			}
		}
		out[i] = c
	}
	return out
}

func (r *rule) matches(v *schemas.Verdict) bool {
	return r.Processor == v.Processor && (r.SLO == "" || r.SLO == v.SLO) && (r.Metric == "" || r.Metric == v.Metric)
}

// target projects a key onto the rule's target dimensions.
func (r *rule) target(k schemas.Key) schemas.Key {
	t := schemas.Key{Tenant: schemas.Wildcard, Service: schemas.Wildcard, Model: schemas.Wildcard, Variant: schemas.Wildcard}
	if r.keep[0] {
		t.Tenant = k.Tenant
	}
	if r.keep[1] {
		t.Service = k.Service
	}
	if r.keep[2] {
		t.Model = k.Model
	}
	if r.keep[3] {
		t.Variant = k.Variant
	}
	return t
}
