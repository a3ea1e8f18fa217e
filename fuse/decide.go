package fuse

import (
	"math/bits"
	"strings"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// Outcome is what a gateway does with one request.
type Outcome uint8

const (
	// Allow: send the request as asked.
	Allow Outcome = iota
	// Degrade: send it to Decision.Fallback instead of the requested model.
	Degrade
	// Reject: fail fast, or fail over to another provider (level 2).
	Reject
	// Throttle: admit Decision.Fraction of requests, reject the rest.
	Throttle
	// Rollback: send canary traffic to the baseline variant
	// (Decision.Fallback when the policy names it, else the gateway's own
	// baseline).
	Rollback
)

func (o Outcome) String() string {
	switch o {
	case Allow:
		return "allow"
	case Degrade:
		return "degrade"
	case Reject:
		return "reject"
	case Throttle:
		return "throttle"
	case Rollback:
		return "rollback"
	}
	return "unknown"
}

// Decision is Decide's answer for one request key.
type Decision struct {
	Outcome Outcome
	// Fallback is the model (Degrade) or baseline variant (Rollback).
	Fallback string
	// Fraction is the share of requests to admit as asked: the throttle
	// fraction (Throttle), or the probe share while the target is
	// half-open (Probe). 0 otherwise.
	Fraction float64
	// Probe is set while the target is half-open: admit Fraction of
	// requests as asked so fusebox can see whether it recovered, and give
	// the rest Outcome.
	Probe bool
	// Matched is false when no command in effect covers the key (then
	// Outcome is Allow); Command is the command that decided.
	Matched bool
	Command fuseschema.FuseCommand
}

// Admit resolves a Throttle or Probe decision for one request, given a
// uniform sample u in [0, 1) that the gateway draws (from its own random
// source, or a hash of the request id for sticky sampling): Allow when
// u < Fraction, else Reject for Throttle and Outcome for Probe. Other
// decisions return Outcome unchanged.
func (d Decision) Admit(u float64) Outcome {
	if (d.Probe || d.Outcome == Throttle) && u < d.Fraction {
		return Allow
	}
	if d.Outcome == Throttle {
		return Reject
	}
	return d.Outcome
}

// decision maps a command in effect to a Decision; ok is false for
// commands that do not change traffic (close, scale_out, closed state).
func decision(c fuseschema.FuseCommand) (Decision, bool) {
	if c.State == fuseschema.StateClosed {
		return Decision{}, false
	}
	d := Decision{Matched: true, Command: c, Probe: c.State == fuseschema.StateHalfOpen}
	switch c.Action {
	case fuseschema.ActionTrip, fuseschema.ActionHalfOpen:
		d.Outcome = Reject
	case fuseschema.ActionDegrade:
		d.Outcome, d.Fallback = Degrade, c.Fallback
	case fuseschema.ActionThrottle:
		d.Outcome = Throttle
	case fuseschema.ActionRollback:
		d.Outcome, d.Fallback = Rollback, c.Fallback
	default: // close, scale_out: advisory, traffic unchanged
		return Decision{}, false
	}
	if d.Probe || d.Outcome == Throttle {
		d.Fraction = c.ThrottleFraction
	}
	return d, true
}

// maskOf has bit i set when dimension i (tenant, service, model, variant)
// of target is concrete, not fuseschema.Wildcard.
func maskOf(t fuseschema.Key) uint8 {
	var m uint8
	for i, v := range [4]string{t.Tenant, t.Service, t.Model, t.Variant} {
		if v != fuseschema.Wildcard {
			m |= 1 << i
		}
	}
	return m
}

func project(k fuseschema.Key, m uint8) fuseschema.Key {
	t := fuseschema.Key{Tenant: fuseschema.Wildcard, Service: fuseschema.Wildcard, Model: fuseschema.Wildcard, Variant: fuseschema.Wildcard}
	if m&1 != 0 {
		t.Tenant = k.Tenant
	}
	if m&2 != 0 {
		t.Service = k.Service
	}
	if m&4 != 0 {
		t.Model = k.Model
	}
	if m&8 != 0 {
		t.Variant = k.Variant
	}
	return t
}

// masksBySpecificity lists the 16 masks, most concrete dimensions first.
var masksBySpecificity = func() [16]uint8 {
	var out [16]uint8
	i := 0
	for n := 4; n >= 0; n-- {
		for m := 15; m >= 0; m-- {
			if bits.OnesCount8(uint8(m)) == n {
				out[i] = uint8(m)
				i++
			}
		}
	}
	return out
}()

// Decide says what to do with a request for key (a full key: tenant,
// service, model, variant of the request). Among the commands in effect
// whose target matches key — not expired at the client's clock, not
// closed, and not advisory (close, scale_out) — the most specific target
// wins (most non-wildcard dimensions), then the highest level, then the
// latest (issued-at, version), then the smallest target (compared tenant, service,
// model, variant). With none, the
// decision is Allow with Matched false: gateways fail open when fusebox
// says nothing or its commands expired.
//
// Mapping: trip → Reject; half_open → Reject with Probe; degrade →
// Degrade(Fallback); throttle → Throttle(Fraction); rollback →
// Rollback(Fallback); any of them in state half_open also sets Probe and
// Fraction (the probe share). Decide is safe for concurrent use and
// allocates nothing.
func (c *Client) Decide(key fuseschema.Key) Decision {
	now := c.cfg.clock().UnixNano()
	c.mu.RLock()
	defer c.mu.RUnlock()
	var best Decision
	bestSpec := -1
	for _, m := range masksBySpecificity {
		if c.masks[m] == 0 {
			continue
		}
		spec := bits.OnesCount8(m)
		if spec < bestSpec {
			break // a more specific target already decided
		}
		cmd, ok := c.state[project(key, m)]
		if !ok || now >= cmd.ExpiresAtUnixNano {
			continue
		}
		d, ok := decision(cmd)
		if !ok {
			continue
		}
		if bestSpec < 0 || better(cmd, best.Command) {
			best, bestSpec = d, spec
		}
	}
	if bestSpec < 0 {
		return Decision{Outcome: Allow}
	}
	return best
}

// better orders two commands of equally specific targets.
func better(a, b fuseschema.FuseCommand) bool {
	if a.Level != b.Level {
		return a.Level > b.Level
	}
	if o := fuseschema.CompareFuseOrder(&a, &b); o != 0 {
		return o > 0
	}
	for _, p := range [4][2]string{{a.Target.Tenant, b.Target.Tenant}, {a.Target.Service, b.Target.Service},
		{a.Target.Model, b.Target.Model}, {a.Target.Variant, b.Target.Variant}} {
		if d := strings.Compare(p[0], p[1]); d != 0 {
			return d < 0
		}
	}
	return false
}
