package breaker

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// VersionShift: a target incarnation's versions are base+1, base+2, ...
// with base = (Unix seconds of its first evaluation) << VersionShift. A
// target that is evicted and comes back, or a breaker that lost its state,
// therefore starts above every version it issued before (as long as an
// incarnation issues fewer than 2^20 commands per second of its life), and
// gateways that never forget a target's last version keep accepting its
// commands. Versions stay below 2^53 until the year 2242, so JavaScript
// readers see them exactly.
const VersionShift = 20

// active is the action an open or half-open target applies.
type active struct {
	RuleID   string         `json:"rule_id"`
	Action   schemas.Action `json:"action"`
	Level    int            `json:"level"`
	Fallback string         `json:"fallback"`
	Fraction float64        `json:"throttle_fraction"`
}

// entry is one evaluation in a series' k-of-n history.
type entry struct {
	VerdictID string  `json:"verdict_id"`
	Breach    bool    `json:"breach"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
}

// signal is one SLO signal that tripped a target — the verdicts of one
// processor, SLO and metric, for every key of the target — with its ok
// streak while the target is half-open. A half-open target closes only
// once every signal of its incident has CloseAfter ok evaluations in a
// row; a warn of the signal (any of its keys) resets its streak; verdicts
// of other signals never touch it.
type signal struct {
	Processor string `json:"processor"`
	SLO       string `json:"slo"`
	Metric    string `json:"metric"`
	// Keys are the keys of the target this signal was seen for since the
	// incident began (one for a fine target; several for a coarse one):
	// they are the keys probed in half-open (ProbesFor).
	Keys []schemas.Key `json:"keys"`
	// Healthy is the ok streak (reasons for the close); HealthyAt the
	// evaluation time of its last entry; BlockedAt the evaluation time of
	// the last warn (an ok of that same evaluation of another key does not
	// count: the evaluation is not healthy).
	Healthy   []schemas.Reason `json:"healthy"`
	HealthyAt int64            `json:"healthy_at"`
	BlockedAt int64            `json:"blocked_at"`
	// StarvedAt is the evaluation time of the signal's last
	// insufficient_data verdict on a full probe window (see starve),
	// StarvedSince the first of that streak, Probes and MinSamples its n
	// and min_samples detail; FedAt the evaluation time of its last ok or
	// warn of the half-open. The signal is starved while StarvedAt >
	// FedAt. All 0 outside a half-open.
	StarvedAt    int64 `json:"starved_at,omitempty"`
	StarvedSince int64 `json:"starved_since,omitempty"`
	Probes       int64 `json:"probes,omitempty"`
	MinSamples   int64 `json:"min_samples,omitempty"`
	FedAt        int64 `json:"fed_at,omitempty"`
}

// starved reports whether the signal's probes are too few to judge it.
func (g *signal) starved() bool { return g.StarvedAt > g.FedAt }

// resetProbe forgets the half-open's streak and starvation.
func (g *signal) resetProbe() {
	g.Healthy, g.BlockedAt = g.Healthy[:0], 0
	g.StarvedAt, g.StarvedSince, g.Probes, g.MinSamples, g.FedAt = 0, 0, 0, 0, 0
}

func (g *signal) is(v *schemas.Verdict) bool {
	return g.Processor == v.Processor && g.SLO == v.SLO && g.Metric == v.Metric
}

func (g *signal) addKey(k schemas.Key) {
	if !slices.Contains(g.Keys, k) {
		g.Keys = append(g.Keys, k)
	}
}

type seriesKey struct {
	rule                   int
	processor, slo, metric string
	key                    schemas.Key
}

// series is the last n evaluations of one (rule, processor, SLO, metric,
// key), oldest first.
type series struct {
	entries []entry
	lastEnd int64
}

func (s *series) push(e entry, n int) {
	if len(s.entries) >= n {
		copy(s.entries, s.entries[len(s.entries)-n+1:])
		s.entries = s.entries[:n-1]
	}
	s.entries = append(s.entries, e)
}

func (s *series) breaches() int {
	c := 0
	for _, e := range s.entries {
		if e.Breach {
			c++
		}
	}
	return c
}

// target is one state machine.
type target struct {
	key    schemas.Key
	state  schemas.BreakerState
	active active
	base   uint64 // version base of this incarnation
	seq    uint64 // commands issued in this incarnation
	// trips is the backoff step: transitions into open since the incident
	// began (reset when a trip comes FlapWindow or more after a close).
	trips     int
	openUntil int64
	closedAt  int64
	incident  string
	reasons   []schemas.Reason // behind the current state
	slos      []string         // SLO names behind the current incident
	// tripped lists the series that opened the target in this incident
	// (trips, escalations, re-trips), each with its half-open ok streak:
	// only they can close it (see closeReady).
	tripped []signal
	// halfOpenAt is when the current half-open began (0 when not
	// half-open): the probe's start, see Probes.
	halfOpenAt int64
	// healthy and healthyAt are the streak of a target restored from a
	// snapshot written before tripped existed (no signals known): ok
	// verdicts of any matching rule close it, as they did then.
	healthy    []schemas.Reason
	healthyAt  int64
	lastIssued int64 // issued-at of the last command; 0 before the first
	stateSince int64 // evaluation time of the last state change (for refresh texts)
	issued     bool
	lastActive int64 // last breach or state change
	clock      int64 // latest evaluation time applied
	series     map[seriesKey]*series
}

func (b *Breaker) newTarget(k schemas.Key, t int64) *target {
	sec := max(t, b.clock) / int64(time.Second)
	if sec < 0 {
		sec = 0
	}
	return &target{
		key: k, state: schemas.StateClosed, base: uint64(sec) << VersionShift,
		lastActive: t, clock: t, series: map[seriesKey]*series{},
	}
}

// observeTarget applies v to target tk for the given rules. It returns the
// command to issue, if any, and whether v was new for at least one series.
func (b *Breaker) observeTarget(tk schemas.Key, ruleIdx []int, v *schemas.Verdict) (schemas.FuseCommand, bool, bool) {
	breach := v.Status == schemas.StatusBreach
	tg := b.targets[tk]
	if tg == nil {
		if !breach {
			// A healthy evaluation of an unknown target: an empty history
			// already says "no breach", so there is nothing to keep.
			return schemas.FuseCommand{}, false, true
		}
		if len(b.targets) >= b.pol.MaxTargets {
			b.stats.TargetOverflow++
			return schemas.FuseCommand{}, false, true
		}
		tg = b.newTarget(tk, v.WindowEndUnixNano)
		b.targets[tk] = tg
	}
	t := max(tg.clock, v.WindowEndUnixNano)
	tg.clock = t
	changed := b.expireCoolDown(tg, t)

	fresh := false
	for _, ri := range ruleIdx {
		sk := seriesKey{rule: ri, processor: v.Processor, slo: v.SLO, metric: v.Metric, key: v.Key}
		s := tg.series[sk]
		if s == nil {
			s = &series{lastEnd: v.WindowEndUnixNano - 1}
			tg.series[sk] = s
		}
		if v.WindowEndUnixNano <= s.lastEnd {
			continue
		}
		s.lastEnd = v.WindowEndUnixNano
		s.push(entry{VerdictID: v.ID, Breach: breach, Value: v.Value, Threshold: v.Threshold}, b.rules[ri].n)
		fresh = true
	}
	if !fresh {
		c, ok := b.emit(tg, t, changed)
		return c, ok, false
	}
	if breach {
		tg.lastActive = t
	}
	if g := tg.signalOf(v); g != nil && tg.state != schemas.StateClosed {
		g.addKey(v.Key) // a coarse target's other keys of the signal are probed too
	}

	switch tg.state {
	case schemas.StateClosed, schemas.StateOpen:
		// Closed: the highest-level rule whose series reached k trips.
		// Open: only a rule above the active level can (escalation).
		if !breach {
			break
		}
		best, bestSeries := -1, (*series)(nil)
		for _, ri := range ruleIdx {
			r := &b.rules[ri]
			if tg.state == schemas.StateOpen && r.level <= tg.active.Level {
				continue
			}
			s := tg.series[seriesKey{rule: ri, processor: v.Processor, slo: v.SLO, metric: v.Metric, key: v.Key}]
			if s.breaches() < r.k {
				continue
			}
			if best < 0 || r.level > b.rules[best].level {
				best, bestSeries = ri, s
			}
		}
		if best >= 0 {
			r := &b.rules[best]
			var rs []schemas.Reason
			for _, e := range bestSeries.entries {
				if e.Breach {
					rs = append(rs, schemas.Reason{VerdictID: e.VerdictID, Text: breachText(r, v, e, bestSeries.breaches())})
				}
			}
			b.trip(tg, r, t, rs, v)
			changed = true
		}
	case schemas.StateHalfOpen:
		if g := tg.signalOf(v); g != nil && v.WindowStartUnixNano < tg.halfOpenAt {
			// A verdict of a tripping series whose window began before
			// the half-open judges traffic of the incident, not the probe:
			// it neither closes, resets nor re-trips. The engine makes the
			// next evaluations of probing processors start at the half-open
			// (ProbesFor); other processors' windows get there once they
			// have slid past it.
			b.stats.Stale++
			break
		}
		switch v.Status {
		case schemas.StatusBreach:
			// The probe failed: open again, with the more severe of the
			// active rule and the highest-level rule that matched.
			best := ruleIdx[0]
			for _, ri := range ruleIdx[1:] {
				if b.rules[ri].level > b.rules[best].level {
					best = ri
				}
			}
			r := &b.rules[best]
			if r.level <= tg.active.Level {
				if i := b.ruleIndex(tg.active.RuleID); i >= 0 {
					r = &b.rules[i]
				} else {
					r = nil // the active rule left the policy: keep its action
				}
			}
			e := entry{VerdictID: v.ID, Breach: true, Value: v.Value, Threshold: v.Threshold}
			what := "probe failed: tripping SLO "
			if tg.signalOf(v) == nil {
				what = "breach of another SLO while half-open: "
			}
			text := what + v.SLO + " (" + v.Processor + "/" + v.Metric + ") breach value=" + fmtFloat(e.Value) + " budget=" + fmtFloat(e.Threshold) +
				", window " + fmtTime(v.WindowStartUnixNano) + ".." + fmtTime(v.WindowEndUnixNano)
			b.trip(tg, r, t, []schemas.Reason{{VerdictID: v.ID, Text: text}}, v)
			changed = true
		case schemas.StatusWarn:
			// Not yet healthy: the tripping series' streak starts again;
			// another series' warn says nothing about what tripped.
			if len(tg.tripped) == 0 {
				tg.healthy = tg.healthy[:0] // legacy snapshot: any series
			} else if g := tg.signalOf(v); g != nil {
				g.Healthy = g.Healthy[:0]
				g.BlockedAt = t
				g.FedAt = t
			}
		case schemas.StatusOK:
			if len(tg.tripped) == 0 {
				changed = b.legacyHealthy(tg, v, t)
				break
			}
			g := tg.signalOf(v)
			if g == nil {
				break // another series' ok neither closes nor resets
			}
			g.FedAt = t
			if (len(g.Healthy) > 0 && t <= g.HealthyAt) || t <= g.BlockedAt {
				break // this evaluation is counted already, or it warned
			}
			g.HealthyAt = t
			g.Healthy = append(g.Healthy, schemas.Reason{VerdictID: v.ID, Text: healthyText(b.pol.CloseAfter, len(g.Healthy)+1, v, tg.halfOpenAt)})
			if tg.closeReady(b.pol.CloseAfter) {
				b.close(tg, t)
				changed = true
			}
		}
	}
	c, ok := b.emit(tg, t, changed)
	return c, ok, true
}

// starve notes an insufficient_data verdict v of target tk: when tk is
// half-open, v is of a signal that tripped it and v's window began after
// the half-open did — a full probe window, no longer growing from the
// half-open's start (processors.Hooks.SetProbes), or a non-probing processor's
// window that has slid past it — the probes of a whole window were too few
// to judge the signal, and they will stay too few while the traffic does:
// the signal is starved until an ok or warn of it comes (see
// processors.StarvedProbe). The state machine itself does not change.
func (b *Breaker) starve(tk schemas.Key, v *schemas.Verdict) {
	tg := b.targets[tk]
	if tg == nil || tg.state != schemas.StateHalfOpen || v.WindowStartUnixNano <= tg.halfOpenAt {
		return
	}
	g := tg.signalOf(v)
	if g == nil {
		return
	}
	t := v.WindowEndUnixNano
	if t < g.StarvedAt {
		return // an older evaluation (a replay): the newer one stands
	}
	if !g.starved() {
		g.StarvedSince = t
	}
	g.StarvedAt, g.Probes, g.MinSamples = t, v.N, 0
	// A starved target is still watched: it stays half-open (refreshed)
	// rather than being evicted as inactive after EvictAfter, which would
	// let its last command expire at the gateways and send the model all
	// the traffic without evidence it recovered (and end the starvation
	// alert as if it were solved). A target that gets no verdict at all
	// is still evicted.
	tg.lastActive = max(tg.lastActive, t)
	for _, d := range v.Details {
		if d.Name == "min_samples" {
			g.MinSamples = int64(d.Value)
		}
	}
}

// StarvedProbes returns the tripping signals of half-open targets that
// their probes cannot judge (see processors.StarvedProbe), sorted by
// target, processor, SLO and metric; nil when there is none. The engine
// logs and counts them.
func (b *Breaker) StarvedProbes() []processors.StarvedProbe {
	var out []processors.StarvedProbe
	for _, tg := range b.targets {
		if tg.state != schemas.StateHalfOpen {
			continue
		}
		for i := range tg.tripped {
			g := &tg.tripped[i]
			if !g.starved() {
				continue
			}
			out = append(out, processors.StarvedProbe{
				Target: tg.key, Processor: g.Processor, SLO: g.SLO, Metric: g.Metric,
				Probes: g.Probes, MinSamples: g.MinSamples, Since: g.StarvedSince, At: g.StarvedAt,
			})
		}
	}
	slices.SortFunc(out, func(a, c processors.StarvedProbe) int {
		for _, p := range [][2]string{{a.Target.String(), c.Target.String()}, {a.Processor, c.Processor}, {a.SLO, c.SLO}, {a.Metric, c.Metric}} {
			if d := strings.Compare(p[0], p[1]); d != 0 {
				return d
			}
		}
		return 0
	})
	return out
}

// signalOf returns the tripping series v belongs to, or nil.
func (tg *target) signalOf(v *schemas.Verdict) *signal {
	for i := range tg.tripped {
		if tg.tripped[i].is(v) {
			return &tg.tripped[i]
		}
	}
	return nil
}

// closeReady reports whether every tripping series has n ok evaluations
// in a row.
func (tg *target) closeReady(n int) bool {
	for i := range tg.tripped {
		if len(tg.tripped[i].Healthy) < n {
			return false
		}
	}
	return len(tg.tripped) > 0
}

// addSignal records v's signal as one that tripped the target.
func (tg *target) addSignal(v *schemas.Verdict) {
	if g := tg.signalOf(v); g != nil {
		g.addKey(v.Key)
		return
	}
	tg.tripped = append(tg.tripped, signal{Processor: v.Processor, SLO: v.SLO, Metric: v.Metric, Keys: []schemas.Key{v.Key}})
}

// legacyHealthy is the close rule of a target restored from a snapshot
// that predates tripping signals: ok verdicts of any matching rule, one
// per evaluation time.
func (b *Breaker) legacyHealthy(tg *target, v *schemas.Verdict, t int64) bool {
	if len(tg.healthy) > 0 && t == tg.healthyAt {
		return false
	}
	tg.healthyAt = t
	tg.healthy = append(tg.healthy, schemas.Reason{VerdictID: v.ID, Text: healthyText(b.pol.CloseAfter, len(tg.healthy)+1, v, tg.halfOpenAt)})
	if len(tg.healthy) >= b.pol.CloseAfter {
		b.close(tg, t)
		return true
	}
	return false
}

// healthyText is a close reason: which ok evaluation of the streak, the
// tripping series, its value against its budget, and the window judged.
func healthyText(need, i int, v *schemas.Verdict, since int64) string {
	w := "window " + fmtTime(v.WindowStartUnixNano) + ".." + fmtTime(v.WindowEndUnixNano)
	if since != 0 && v.WindowStartUnixNano >= since {
		w = "probe " + w + " (traffic since half-open)"
	}
	return "healthy " + strconv.Itoa(i) + " of " + strconv.Itoa(need) + " of tripping SLO " + v.SLO + " (" + v.Processor + "/" + v.Metric +
		"): ok value=" + fmtFloat(v.Value) + " budget=" + fmtFloat(v.Threshold) + ", " + w
}

func fmtTime(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05") }

func (b *Breaker) ruleIndex(id string) int {
	for i := range b.rules {
		if b.rules[i].id == id {
			return i
		}
	}
	return -1
}

func breachText(r *rule, v *schemas.Verdict, e entry, count int) string {
	return string(r.Action) + " (" + strconv.Itoa(count) + " of last " + strconv.Itoa(r.n) + ", k=" + strconv.Itoa(r.k) + "): " +
		v.Processor + "/" + v.SLO + "/" + v.Metric + " breach value=" + fmtFloat(e.Value) + " budget=" + fmtFloat(e.Threshold)
}

// trip opens the target with rule r (nil: keep the active action).
func (b *Breaker) trip(tg *target, r *rule, t int64, reasons []schemas.Reason, v *schemas.Verdict) {
	if tg.state == schemas.StateClosed {
		if tg.trips > 0 && t-tg.closedAt >= int64(b.pol.FlapWindow) {
			tg.trips = 0 // not flapping: a new incident starts from the base cool-down
		}
		tg.incident = incidentID(tg.key, t)
		tg.slos = tg.slos[:0]
		tg.tripped = tg.tripped[:0]
	}
	tg.addSignal(v)
	slo := v.SLO
	tg.trips++
	b.stats.Trips++
	tg.state = schemas.StateOpen
	tg.openUntil = t + b.coolDown(tg.trips)
	if r != nil {
		tg.active = active{RuleID: r.id, Action: r.Action, Level: r.level, Fallback: r.Fallback, Fraction: r.ThrottleFraction}
	}
	tg.reasons = reasons
	if slo != "" && !slices.Contains(tg.slos, slo) {
		tg.slos = append(tg.slos, slo)
	}
	tg.healthy = tg.healthy[:0]
	tg.halfOpenAt = 0
	for i := range tg.tripped {
		tg.tripped[i].resetProbe()
	}
	tg.lastActive = t
	// Histories of rules at or below the active level start afresh (they
	// cannot act while the target is open, and old breaches must not
	// re-trip it after a close); those above keep counting, so a ladder
	// such as degrade at 3 of 10, trip at 6 of 10 escalates on the 6th.
	for k := range tg.series {
		if b.rules[k.rule].level <= tg.active.Level {
			delete(tg.series, k)
		}
	}
}

// coolDown is CoolDown × BackoffFactor^(trips-1), capped at MaxCoolDown, ns.
func (b *Breaker) coolDown(trips int) int64 {
	d, limit := float64(b.pol.CoolDown), float64(b.pol.MaxCoolDown)
	for i := 1; i < trips && d < limit; i++ {
		d *= b.pol.BackoffFactor
	}
	return int64(min(d, limit))
}

// expireCoolDown moves an open target whose cool-down has ended to
// half-open and reports whether it did.
func (b *Breaker) expireCoolDown(tg *target, t int64) bool {
	if tg.state != schemas.StateOpen || t < tg.openUntil {
		return false
	}
	tg.state = schemas.StateHalfOpen
	tg.halfOpenAt = t
	tg.healthy = tg.healthy[:0]
	for i := range tg.tripped {
		tg.tripped[i].resetProbe()
	}
	tg.lastActive = t
	cd := time.Duration(b.coolDown(tg.trips)).String()
	rs := make([]schemas.Reason, len(tg.reasons))
	for i, r := range tg.reasons {
		rs[i] = schemas.Reason{VerdictID: r.VerdictID, Text: "half-open after " + cd + " cool-down (trip " + strconv.Itoa(tg.trips) + "); " + trimPrefix(r.Text)}
	}
	tg.reasons = rs
	return true
}

// trimPrefix drops an earlier "half-open after ...; " so texts do not grow
// on repeated half-opens.
func trimPrefix(s string) string {
	const p = "half-open after "
	for len(s) >= len(p) && s[:len(p)] == p {
		i := 0
		for i < len(s) && s[i] != ';' {
			i++
		}
		if i+2 > len(s) {
			return s
		}
		s = s[i+2:]
	}
	return s
}

func (b *Breaker) close(tg *target, t int64) {
	tg.state = schemas.StateClosed
	tg.closedAt = t
	tg.lastActive = t
	if len(tg.tripped) == 0 {
		tg.reasons = slices.Clone(tg.healthy)
	} else {
		tg.reasons = tg.reasons[:0:0]
		for i := range tg.tripped {
			g := &tg.tripped[i]
			tg.reasons = append(tg.reasons, g.Healthy[len(g.Healthy)-b.pol.CloseAfter:]...)
		}
	}
	tg.healthy = tg.healthy[:0]
	tg.tripped = tg.tripped[:0]
	tg.halfOpenAt = 0
	tg.active = active{}
	b.stats.Closes++
	clear(tg.series)
}

// emit issues a command when the state changed, or a refresh when the
// last command of an open or half-open target is TTL/2 old.
func (b *Breaker) emit(tg *target, t int64, changed bool) (schemas.FuseCommand, bool) {
	if !changed {
		if tg.state == schemas.StateClosed || !tg.issued || t-tg.lastIssued < int64(b.pol.CommandTTL/2) {
			return schemas.FuseCommand{}, false
		}
		b.stats.Refreshes++
	} else {
		tg.stateSince = t
	}
	tg.seq++
	tg.issued = true
	tg.lastIssued = t
	b.stats.Commands++
	c := schemas.FuseCommand{
		Target:            tg.key,
		State:             tg.state,
		Version:           tg.base + tg.seq,
		IssuedAtUnixNano:  t,
		ExpiresAtUnixNano: t + int64(b.pol.CommandTTL),
		Reasons:           slices.Clone(tg.reasons),
	}
	if !changed {
		// A refresh: same state, new expiry. Say so, so the texts do not
		// read as new failures ("probe failed" again).
		pre := "refresh of the " + string(tg.state) + " state (unchanged since " + fmtTime(tg.stateSince) + "): "
		for i := range c.Reasons {
			c.Reasons[i].Text = pre + c.Reasons[i].Text
		}
	}
	switch tg.state {
	case schemas.StateClosed:
		c.Action = schemas.ActionClose
	case schemas.StateOpen:
		c.Action, c.Level, c.Fallback = tg.active.Action, tg.active.Level, tg.active.Fallback
		c.ThrottleFraction = tg.active.Fraction
	case schemas.StateHalfOpen:
		c.Action, c.Level, c.Fallback = tg.active.Action, tg.active.Level, tg.active.Fallback
		if c.Action == schemas.ActionTrip {
			c.Action = schemas.ActionHalfOpen
		}
		c.ThrottleFraction = max(b.pol.HalfOpenFraction, tg.active.Fraction)
	}
	c.CorrelationIDs = make([]string, 0, 1+len(tg.slos))
	c.CorrelationIDs = append(c.CorrelationIDs, tg.incident)
	for _, s := range tg.slos {
		c.CorrelationIDs = append(c.CorrelationIDs, "slo:"+s)
	}
	return c, true
}

// incidentID is the hex SHA-256 (first 16 bytes) of the target and the
// time of the trip that opened the incident: deterministic, and shared by
// every command from that trip to the close.
func incidentID(k schemas.Key, t int64) string {
	h := sha256.New()
	h.Write([]byte("fusebox.incident\x00"))
	h.Write([]byte(k.String()))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t))
	h.Write(b[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}
