package effect

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// The outcomes, the part of an effect verdict's Method after the action.
const (
	OutcomeRecovered    = "recovered"
	OutcomeNotRecovered = "not_recovered"
	OutcomeHeld         = "held"
	OutcomeRelapsed     = "relapsed"
	OutcomeNoTraffic    = "no_traffic"
	OutcomeSuperseded   = "superseded"
	OutcomeSLORemoved   = "slo_removed"
	OutcomeUnknownCause = "unknown_cause"
)

// DetailNames lists the details of every effect verdict, in order.
var DetailNames = []string{
	"command_version", "command_level", "before", "after", "after_status", "recovered",
	"evaluations", "max_evaluations", "evaluations_with_traffic", "scope_keys", "superseded_by",
}

// ErrNoInterval is returned by New for an SLO interval that is not
// positive.
var ErrNoInterval = errors.New("effect: SLO evaluation interval must be positive")

// Judge judges the effect of fuse commands. It is not safe for concurrent
// use: the engine calls it from the partition worker's goroutine.
type Judge struct {
	cfg     Config
	version string
	every   map[string]int64
	// targets holds per target the judgement of its latest command
	// (slot{probe: false}) and, while a half-open probes, the half-open's
	// (slot{probe: true}): a half-open does not end the judgement of the
	// command that opened the target, the users' traffic still goes where
	// that command sent it.
	targets map[slot]*judgement
	stats   Stats
}

type slot struct {
	key   schemas.Key
	probe bool
}

func (g *judgement) slot() slot { return slot{g.Target, g.Role == schemas.ActionHalfOpen} }

// role is what a command does with the traffic: its action, or half_open
// for any command in state half_open (the breaker keeps a degrade's or a
// throttle's action while it probes).
func role(c *schemas.FuseCommand) schemas.Action {
	if c.State == schemas.StateHalfOpen {
		return schemas.ActionHalfOpen
	}
	return c.Action
}

// Stats counts what the judge saw and did (part of the snapshot).
type Stats struct {
	Commands       uint64 `json:"commands"`        // commands passed to Evaluate
	Refreshes      uint64 `json:"refreshes"`       // commands that re-issued the previous one; not judged
	Verdicts       uint64 `json:"verdicts"`        // effect verdicts emitted
	Recovered      uint64 `json:"recovered"`       // recovered or held
	NotRecovered   uint64 `json:"not_recovered"`   // not_recovered or relapsed
	Undecided      uint64 `json:"undecided"`       // no_traffic, superseded, slo_removed, unknown_cause
	TargetOverflow uint64 `json:"target_overflow"` // commands for a new target beyond MaxTargets; not judged
	Evictions      uint64 `json:"evictions"`       // targets forgotten after EvictAfter or a judged close
	Pending        int    `json:"-"`               // judgements not decided yet
}

// New validates cfg and returns a judge for a configuration of version
// configVersion (part of every verdict id) whose SLOs evaluate at the
// given intervals (by SLO name; a signal of an SLO not listed is judged
// slo_removed).
func New(cfg Config, configVersion string, every map[string]time.Duration) (*Judge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	j := &Judge{cfg: cfg, version: configVersion, every: make(map[string]int64, len(every)), targets: map[slot]*judgement{}}
	for slo, d := range every {
		if d <= 0 {
			return nil, errors.Join(ErrNoInterval, errors.New("SLO "+slo+": "+d.String()))
		}
		j.every[slo] = int64(d)
	}
	return j, nil
}

// Stats returns the counters.
func (j *Judge) Stats() Stats {
	s := j.stats
	for _, g := range j.targets {
		if g.Pending {
			s.Pending++
		}
	}
	return s
}

// judgement is the latest judged command of one target.
type judgement struct {
	Target   schemas.Key    `json:"target"`
	Version  uint64         `json:"version"`
	IssuedAt int64          `json:"issued_at"`
	Action   schemas.Action `json:"action"`
	// Role is role(the command): what decides its scope, slot and the
	// ACTION of its verdict's method.
	Role     schemas.Action       `json:"role"`
	State    schemas.BreakerState `json:"state"`
	Level    int                  `json:"level"`
	Fallback string               `json:"fallback"`
	Fraction float64              `json:"fraction"`
	Incident string               `json:"incident"`
	// Reasons digests the command's reason verdict ids: a refresh cites
	// the same verdicts, a re-trip of the same incident new ones.
	Reasons string `json:"reasons"`
	// The signal: the (processor, SLO, metric) of the verdict that caused
	// the command, the key it was for (Cause) and its budget.
	Processor string      `json:"processor"`
	SLO       string      `json:"slo"`
	Metric    string      `json:"metric"`
	Cause     schemas.Key `json:"cause"`
	Threshold float64     `json:"threshold"`
	Before    float64     `json:"before"`
	// Scope is the keys judged (see the package doc).
	Scope schemas.Key `json:"scope"`
	// Evaluations taken so far; WithTraffic of them had a verdict with
	// data in the scope; After* is the latest such evaluation's after.
	Evaluations int            `json:"evaluations"`
	WithTraffic int            `json:"with_traffic"`
	After       float64        `json:"after"`
	AfterStatus schemas.Status `json:"after_status"`
	AfterN      int64          `json:"after_n"`
	AfterKeys   int            `json:"after_keys"`
	// Own is the latest value with data of the signal on Cause itself
	// (OwnSeen once there was one): the before of a half-open that
	// inherits the signal.
	Own     float64 `json:"own"`
	OwnSeen bool    `json:"own_seen"`
	Pending bool    `json:"pending"`
}

// refreshedBy reports whether c re-issues g's command unchanged but for
// version, times and reason texts.
func (g *judgement) refreshedBy(c *schemas.FuseCommand) bool {
	return c.Action == g.Action && c.State == g.State && c.Level == g.Level && c.Fallback == g.Fallback &&
		c.ThrottleFraction == g.Fraction && incident(c) == g.Incident && reasonsDigest(c) == g.Reasons && c.Version > g.Version
}

// reasonsDigest is the hex SHA-256 (first 8 bytes) of c's reason verdict
// ids, in order.
func reasonsDigest(c *schemas.FuseCommand) string {
	h := sha256.New()
	for _, r := range c.Reasons {
		h.Write([]byte(r.VerdictID))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func incident(c *schemas.FuseCommand) string {
	if len(c.CorrelationIDs) > 0 {
		return c.CorrelationIDs[0]
	}
	return ""
}

// Scope returns the keys the effect of a command with action a on target
// t is judged over (see the package doc).
func Scope(a schemas.Action, t schemas.Key) schemas.Key {
	switch a {
	case schemas.ActionTrip, schemas.ActionDegrade:
		t.Model, t.Variant = schemas.Wildcard, schemas.Wildcard
	case schemas.ActionRollback:
		t.Variant = schemas.Wildcard
	}
	return t
}

// Evaluate is called at every evaluation boundary now (Unix ns, increasing
// from call to call), after the SLOs due at now evaluated (verdicts) and
// the breaker acted (cmds, in the order issued). It first advances the
// pending judgements with the verdicts of now — the commands of now are
// judged from the next evaluations on — then starts a judgement for every
// command of now, and returns the effect verdicts decided: the pending
// ones in target order, then those the commands caused, in command order.
func (j *Judge) Evaluate(now int64, verdicts []schemas.Verdict, cmds []schemas.FuseCommand) []schemas.Verdict {
	var out []schemas.Verdict
	if len(j.targets) > 0 {
		out = j.advance(now, verdicts)
	}
	if len(cmds) > 0 {
		byID := make(map[string]int, len(verdicts))
		for i := range verdicts {
			byID[verdicts[i].ID] = i
		}
		for i := range cmds {
			out = j.command(out, now, &cmds[i], verdicts, byID)
		}
	}
	for k, g := range j.targets {
		if !g.Pending && (g.Role == schemas.ActionClose || now-g.IssuedAt >= int64(j.cfg.EvictAfter)) {
			// A decided close needs nothing more (the next trip has its
			// own cause); other decided judgements are kept until
			// EvictAfter: an open one for the half-open that inherits its
			// signal, a half-open one so that the breaker's refreshes of
			// that half-open are known as refreshes and not judged again
			// (the next non-probe command of the target drops it).
			delete(j.targets, k)
			j.stats.Evictions++
		}
	}
	return out
}

type signal struct{ processor, slo, metric string }

// advance takes the evaluation of now for every pending judgement whose
// SLO has a boundary at or before now that was not taken yet.
func (j *Judge) advance(now int64, verdicts []schemas.Verdict) []schemas.Verdict {
	var pend []*judgement
	for _, g := range j.targets {
		if g.Pending {
			pend = append(pend, g)
		}
	}
	if len(pend) == 0 {
		return nil
	}
	slices.SortFunc(pend, compareJudgements)
	var bySignal map[signal][]int
	var out []schemas.Verdict
	for _, g := range pend {
		every, ok := j.every[g.SLO]
		if !ok {
			out = append(out, j.decide(g, now, OutcomeSLORemoved, 0))
			continue
		}
		k := floorDiv(now, every) - floorDiv(g.IssuedAt, every)
		if k <= int64(g.Evaluations) {
			continue // no new boundary of this SLO (another SLO's evaluation)
		}
		n := int64(j.cfg.Evaluations)
		if k <= n && now%every == 0 {
			if bySignal == nil {
				bySignal = map[signal][]int{}
				for i := range verdicts {
					v := &verdicts[i]
					s := signal{v.Processor, v.SLO, v.Metric}
					bySignal[s] = append(bySignal[s], i)
				}
			}
			g.Evaluations = int(k)
			if outcome, done := j.take(g, now, verdicts, bySignal[signal{g.Processor, g.SLO, g.Metric}]); done {
				out = append(out, j.decide(g, now, outcome, 0))
				continue
			}
		}
		g.Evaluations = int(min(k, n)) // boundaries jumped over had no traffic
		if k >= n {
			outcome := OutcomeNoTraffic
			if g.WithTraffic > 0 {
				outcome = OutcomeNotRecovered
				if g.Role == schemas.ActionClose {
					outcome = OutcomeHeld
				}
			}
			out = append(out, j.decide(g, now, outcome, 0))
		}
	}
	return out
}

// take folds the scope's verdicts of one evaluation (window end now) into
// g and reports whether they decide it.
func (j *Judge) take(g *judgement, now int64, verdicts []schemas.Verdict, idx []int) (string, bool) {
	var best *schemas.Verdict
	keys := 0
	for _, i := range idx {
		v := &verdicts[i]
		if v.WindowEndUnixNano != now || v.Status == schemas.StatusInsufficientData || !g.Scope.Matches(v.Key) {
			continue
		}
		keys++
		if v.Key == g.Cause {
			g.Own, g.OwnSeen = v.Value, true
		}
		if best == nil || worse(v, best) {
			best = v
		}
	}
	if best == nil {
		return "", false
	}
	g.WithTraffic++
	g.After, g.AfterStatus, g.AfterN, g.AfterKeys = best.Value, best.Status, best.N, keys
	if g.Role == schemas.ActionClose {
		return OutcomeRelapsed, best.Status == schemas.StatusBreach
	}
	return OutcomeRecovered, best.Status == schemas.StatusOK
}

// worse orders the candidates for the after value: the worse status, then
// the larger N, then the smaller key.
func worse(a, b *schemas.Verdict) bool {
	if ra, rb := rank(a.Status), rank(b.Status); ra != rb {
		return ra > rb
	}
	if a.N != b.N {
		return a.N > b.N
	}
	return a.Key.String() < b.Key.String()
}

// afterRank is the after_status detail: 0 no after value yet, 1 ok, 2
// warn, 3 breach.
func afterRank(g *judgement) int {
	if g.WithTraffic == 0 {
		return 0
	}
	return rank(g.AfterStatus)
}

func rank(s schemas.Status) int {
	switch s {
	case schemas.StatusBreach:
		return 3
	case schemas.StatusWarn:
		return 2
	}
	return 1
}

// command starts the judgement of c, superseding the target's pending
// one, and appends to out the verdicts decided now: the superseded one,
// and c's own when its cause is unknown.
func (j *Judge) command(out []schemas.Verdict, now int64, c *schemas.FuseCommand, verdicts []schemas.Verdict, byID map[string]int) []schemas.Verdict {
	j.stats.Commands++
	probe := role(c) == schemas.ActionHalfOpen
	prev := j.targets[slot{c.Target, probe}]
	if prev != nil && prev.refreshedBy(c) {
		j.stats.Refreshes++
		return out
	}
	// A half-open ends only an earlier half-open's judgement; any other
	// command ends both the target's.
	for _, sl := range []slot{{c.Target, false}, {c.Target, true}} {
		if g := j.targets[sl]; g != nil && g.Pending && (sl.probe || !probe) {
			out = append(out, j.decide(g, now, OutcomeSuperseded, c.Version))
		}
	}
	main := j.targets[slot{c.Target, false}]
	if prev == nil && len(j.targets) >= j.cfg.MaxTargets {
		j.stats.TargetOverflow++
		return out
	}
	g := &judgement{
		Target: c.Target, Version: c.Version, IssuedAt: c.IssuedAtUnixNano, Action: c.Action, Role: role(c), State: c.State, Level: c.Level,
		Fallback: c.Fallback, Fraction: c.ThrottleFraction, Incident: incident(c), Reasons: reasonsDigest(c), Scope: Scope(role(c), c.Target), Pending: true,
	}
	cause := -1
	for i := len(c.Reasons) - 1; i >= 0 && cause < 0; i-- {
		if vi, ok := byID[c.Reasons[i].VerdictID]; ok {
			cause = vi
		}
	}
	switch {
	case cause >= 0:
		v := &verdicts[cause]
		g.Processor, g.SLO, g.Metric, g.Cause, g.Threshold, g.Before = v.Processor, v.SLO, v.Metric, v.Key, v.Threshold, v.Value
		g.Own, g.OwnSeen = v.Value, v.Status != schemas.StatusInsufficientData
	case main != nil && main.SLO != "":
		// A half-open: its reasons are the trip's verdicts, evaluations
		// ago. The signal is the trip's; before is its latest value on
		// the tripping key.
		g.Processor, g.SLO, g.Metric, g.Cause, g.Threshold = main.Processor, main.SLO, main.Metric, main.Cause, main.Threshold
		g.Before = main.Before
		if main.OwnSeen {
			g.Before = main.Own
		}
		g.Own, g.OwnSeen = main.Own, main.OwnSeen
	}
	j.targets[g.slot()] = g
	if !probe {
		delete(j.targets, slot{c.Target, true})
	}
	if g.SLO == "" {
		out = append(out, j.decide(g, now, OutcomeUnknownCause, 0))
	}
	return out
}

// decide ends g's judgement at now with outcome and returns its verdict.
func (j *Judge) decide(g *judgement, now int64, outcome string, supersededBy uint64) schemas.Verdict {
	g.Pending = false
	j.stats.Verdicts++
	status := schemas.StatusInsufficientData
	recovered := 0.0
	switch outcome {
	case OutcomeRecovered, OutcomeHeld:
		status, recovered = schemas.StatusOK, 1
		j.stats.Recovered++
	case OutcomeNotRecovered, OutcomeRelapsed:
		status = schemas.StatusBreach
		j.stats.NotRecovered++
	default:
		j.stats.Undecided++
	}
	v := schemas.Verdict{
		ID:        schemas.VerdictID(Name, g.SLO, g.Metric, g.Target, int64(g.Version), j.version),
		Processor: Name, SLO: g.SLO, Metric: g.Metric, Key: g.Target,
		WindowStartUnixNano: g.IssuedAt, WindowEndUnixNano: max(now, g.IssuedAt),
		Threshold: g.Threshold, Status: status, Method: string(g.Role) + ":" + outcome,
		ConfigVersion: j.version,
	}
	if status != schemas.StatusInsufficientData {
		v.Value, v.N = g.After, g.AfterN
	}
	v.Details = []schemas.Detail{
		{Name: "command_version", Value: float64(g.Version)},
		{Name: "command_level", Value: float64(g.Level)},
		{Name: "before", Value: g.Before},
		{Name: "after", Value: g.After},
		{Name: "after_status", Value: float64(afterRank(g))},
		{Name: "recovered", Value: recovered},
		{Name: "evaluations", Value: float64(g.Evaluations)},
		{Name: "max_evaluations", Value: float64(j.cfg.Evaluations)},
		{Name: "evaluations_with_traffic", Value: float64(g.WithTraffic)},
		{Name: "scope_keys", Value: float64(g.AfterKeys)},
		{Name: "superseded_by", Value: float64(supersededBy)},
	}
	return v
}

// compareJudgements orders judgements by target, the open command's
// before the half-open's: a total order on the slots (one judgement per
// slot), so that the verdicts decided at one boundary come out in one
// order whatever the map's.
func compareJudgements(a, b *judgement) int {
	if c := strings.Compare(a.Target.String(), b.Target.String()); c != 0 {
		return c
	}
	switch pa, pb := a.slot().probe, b.slot().probe; {
	case pa == pb:
		return 0
	case pb:
		return -1
	}
	return 1
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
