package breaker

import (
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Name is the breaker's name: the Kind of its state id.
const Name = "breaker"

// Breaker turns verdicts into fuse commands, one state machine per target.
// It is not safe for concurrent use: the engine calls it from one
// goroutine. It reads no clock: time is the verdicts' window ends and the
// instants passed to Advance.
type Breaker struct {
	pol     Policy
	rules   []rule
	targets map[schemas.Key]*target
	// clock is the latest evaluation time seen (Unix ns); new targets take
	// their version base from it, so they start above any target evicted
	// before.
	clock int64
	stats Stats
}

// Stats counts what the breaker saw and did since it was created (or
// restored: the counts are part of the snapshot).
type Stats struct {
	Verdicts       uint64 // verdicts passed to Observe
	Invalid        uint64 // failed schemas.Verdict.Validate; ignored
	Unmatched      uint64 // matched no rule; ignored
	Insufficient   uint64 // insufficient_data verdicts that matched a rule; ignored
	Duplicates     uint64 // window end not after the series' last one (a replay or a late verdict); ignored
	TargetOverflow uint64 // breaches for a new target dropped because MaxTargets targets are held
	Stale          uint64 // half-open: verdicts of a tripping series whose window began before the half-open; ignored
	Commands       uint64 // commands issued, refreshes included
	Trips          uint64 // transitions into open (first trips, re-trips, escalations)
	Closes         uint64 // half-open targets closed
	Refreshes      uint64 // commands re-issued unchanged before they expired
	Evictions      uint64 // targets dropped after EvictAfter of inactivity
	Targets        int    // targets held now
}

// New validates the policy and returns a breaker with no targets.
func New(p Policy) (*Breaker, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Target = slices.Clone(p.Target)
	p.Rules = slices.Clone(p.Rules)
	return &Breaker{pol: p, rules: compile(&p), targets: map[schemas.Key]*target{}}, nil
}

// Policy returns the policy the breaker runs.
func (b *Breaker) Policy() Policy { return b.pol }

// Stats returns the counters.
func (b *Breaker) Stats() Stats {
	s := b.stats
	s.Targets = len(b.targets)
	return s
}

// Targets is the number of targets held, for memory accounting.
func (b *Breaker) Targets() int { return len(b.targets) }

// Observe feeds one verdict, evaluated at v.WindowEndUnixNano, to the
// targets of the rules it matches and returns the commands that caused, at
// most one per target, ordered as the rules that produced them. A verdict
// that fails Validate, matches no rule, is insufficient_data, or repeats
// (its window end is not after the last one seen for its series) changes
// no state machine and returns nil; an insufficient_data one may mark a
// half-open target's probes starved (StarvedProbes).
func (b *Breaker) Observe(v schemas.Verdict) []schemas.FuseCommand {
	b.stats.Verdicts++
	if err := v.Validate(); err != nil {
		b.stats.Invalid++
		return nil
	}
	// Group the matching rules by target, in rule order.
	type group struct {
		key   schemas.Key
		rules []int
	}
	var groups []group
	for i := range b.rules {
		if !b.rules[i].matches(&v) {
			continue
		}
		tk := b.rules[i].target(v.Key)
		j := slices.IndexFunc(groups, func(g group) bool { return g.key == tk })
		if j < 0 {
			groups = append(groups, group{key: tk})
			j = len(groups) - 1
		}
		groups[j].rules = append(groups[j].rules, i)
	}
	if len(groups) == 0 {
		b.stats.Unmatched++
		return nil
	}
	if v.Status == schemas.StatusInsufficientData {
		b.stats.Insufficient++
		for _, g := range groups {
			b.starve(g.key, &v)
		}
		return nil
	}
	if v.WindowEndUnixNano > b.clock {
		b.clock = v.WindowEndUnixNano
	}
	var out []schemas.FuseCommand
	dup := true
	for _, g := range groups {
		c, ok, fresh := b.observeTarget(g.key, g.rules, &v)
		if fresh {
			dup = false
		}
		if ok {
			out = append(out, c)
		}
	}
	if dup {
		b.stats.Duplicates++
	}
	return out
}

// Advance moves every target to evaluation time now (Unix ns): open
// targets whose cool-down has ended go half-open, commands at least TTL/2
// old are refreshed, and targets inactive for EvictAfter are dropped
// (without a command: their last command expires at the gateways). It
// returns the commands, at most one per target, sorted by target. Call it
// whenever event time advances, at least every CommandTTL/2.
func (b *Breaker) Advance(now int64) []schemas.FuseCommand {
	if now > b.clock {
		b.clock = now
	}
	var out []schemas.FuseCommand
	for k, tg := range b.targets {
		t := max(tg.clock, now)
		tg.clock = t
		if t-tg.lastActive >= int64(b.pol.EvictAfter) {
			delete(b.targets, k)
			b.stats.Evictions++
			continue
		}
		changed := b.expireCoolDown(tg, t)
		if c, ok := b.emit(tg, t, changed); ok {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, c schemas.FuseCommand) int {
		return strings.Compare(a.Target.String(), c.Target.String())
	})
	return out
}

// ProbesFor returns, for SLO slo, the keys whose verdicts must judge only
// the traffic since a half-open began, each with that start (Unix ns):
// every tripping series of a half-open target whose SLO is slo. The
// engine passes it to the SLO's processor before each evaluation
// (processors.Hooks.SetProbes); nil when there is none. It depends on the breaker's
// state only, so it is as deterministic as the commands.
func (b *Breaker) ProbesFor(slo string) map[schemas.Key]int64 {
	var out map[schemas.Key]int64
	for _, tg := range b.targets {
		if tg.state != schemas.StateHalfOpen {
			continue
		}
		for i := range tg.tripped {
			g := &tg.tripped[i]
			if g.SLO != slo {
				continue
			}
			if out == nil {
				out = map[schemas.Key]int64{}
			}
			// Two targets probing one key (two rules with different
			// target dimensions): the later start, the fresher window.
			for _, k := range g.Keys {
				out[k] = max(out[k], tg.halfOpenAt)
			}
		}
	}
	return out
}
