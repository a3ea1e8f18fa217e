package incident

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// CommandRule makes the stage, not the per-key breaker, the writer of an
// SLO's fuse commands (the breaker rule's target: attributed):
//
//   - an aggregate incident of the SLO gets one command for its level
//     when it opens — the attributed value as a target with every other
//     dimension a wildcard (model X: */*/X/*; a model's canary:
//     */*/X/canary; tenant T: T/*/*/*), or one per model of the
//     incident's keys for a provider — refreshed every TTL/2 while open
//     and closed when the incident closes;
//   - the per-key breaker's commands (EvalSummary.Commands) for targets
//     that carry an open aggregate incident's value are suppressed
//     (Stats.Suppressed): the level's command covers them;
//   - the others pass through when they trip a key that breaches at the
//     boundary, and then for the rest of the target's life (half-open,
//     refresh, close); the breaker's commands for a target whose open
//     never went out are suppressed otherwise (its lag behind a recovery:
//     a refresh, a half-open, a close while the key is healthy); and when
//     an aggregate incident closes, the newest suppressed open of each
//     per-key target whose key still breaches (not expired, not closed
//     since) is passed on then, so a key that stays bad is held by its
//     own breaker again at once.
//
// Key incidents write nothing of their own: their key's breaker's
// commands pass through.
type CommandRule struct {
	// SLO names the SLO.
	SLO string
	// Action and Level of the level's command; default trip, 2.
	Action schemas.Action
	Level  int
	// Fallback names the model to degrade to (Action degrade).
	Fallback string
	// TTL is the command's lifetime; default 15m (the breaker's
	// command_ttl).
	TTL time.Duration
}

// Commands counts the commands the stage wrote and suppressed.
type Commands struct {
	Issued     int64 `json:"issued"`
	Forwarded  int64 `json:"forwarded"`
	Suppressed int64 `json:"suppressed"`
}

func (s *Stage) rule(slo string) *CommandRule {
	for i := range s.cfg.Commands {
		if s.cfg.Commands[i].SLO == slo {
			return &s.cfg.Commands[i]
		}
	}
	return nil
}

// levelTargets is the targets of an aggregate incident's command.
func (s *Stage) levelTargets(o *open, keys []schemas.Key) []schemas.Key {
	l := levels[o.Level]
	if l.dims[0] == schemas.DimProvider {
		var models []string
		for _, k := range keys {
			models = append(models, k.Model)
		}
		slices.Sort(models)
		var out []schemas.Key
		for _, m := range slices.Compact(models) {
			out = append(out, schemas.Key{Tenant: schemas.Wildcard, Service: schemas.Wildcard, Model: m, Variant: schemas.Wildcard})
		}
		return out
	}
	t := schemas.Key{Tenant: schemas.Wildcard, Service: schemas.Wildcard, Model: schemas.Wildcard, Variant: schemas.Wildcard}
	for i, v := range strings.Split(o.Value, ",") {
		switch l.dims[i] {
		case schemas.DimTenant:
			t.Tenant = v
		case schemas.DimService:
			t.Service = v
		case schemas.DimModel:
			t.Model = v
		case schemas.DimVariant:
			t.Variant = v
		}
	}
	return []schemas.Key{t}
}

// levelCommand is one command of an aggregate incident at at; rec is the
// incident's record there (the reason cites it).
func (s *Stage) levelCommand(r *CommandRule, o *open, target schemas.Key, at int64, state schemas.BreakerState, rec *schemas.Incident, slo string) schemas.FuseCommand {
	c := schemas.FuseCommand{
		Target: target, Action: r.Action, Level: r.Level, State: state, Fallback: r.Fallback,
		// One command per target per boundary: the boundary's second
		// makes the version, as the breaker's base does (VersionShift 20).
		Version:          uint64(at/1e9)<<20 | 1,
		IssuedAtUnixNano: at, ExpiresAtUnixNano: at + int64(r.TTL),
		Reasons: []schemas.Reason{{VerdictID: rec.ID, Text: fmt.Sprintf("incident %s=%s: %d of %d keys breach (others %d of %d), p=%.3g",
			rec.Dimension, rec.Value, rec.Breaching, rec.Breaching+rec.Healthy, rec.OtherBreaching, rec.OtherBreaching+rec.OtherHealthy, rec.PValue)}},
		CorrelationIDs: []string{o.ID, "slo:" + slo},
	}
	if state == schemas.StateClosed {
		c.Action, c.Level, c.Fallback = schemas.ActionClose, 0, ""
	}
	return c
}

// commands writes the level commands of the aggregate incidents that
// changed at at (their records are recs) and passes or suppresses the
// per-key breaker's commands cmds (see CommandRule).
func (s *Stage) commands(slo string, st *sloState, at int64, keys []schemas.SummaryKey, recs []schemas.Incident, cmds []schemas.FuseCommand) []schemas.FuseCommand {
	r := s.rule(slo)
	if r == nil {
		// No rule for it here (a process whose SLO file has none yet, in
		// a rolling edit): the breaker's commands go out as it decided.
		s.stats.Commands.Forwarded += int64(len(cmds))
		return cmds
	}
	var out []schemas.FuseCommand
	closed := false
	for i := range recs {
		rec := &recs[i]
		if rec.Dimension == schemas.DimKey || rec.MergedInto != "" {
			continue
		}
		name := rec.Dimension + "=" + rec.Value
		o := st.Open[name]
		switch {
		case rec.Status == schemas.IncidentOpened && o != nil:
			// Targets of finer incidents merged into it (merge) stay
			// under its commands, so that none outlives it.
			o.Targets = append(s.levelTargets(o, rec.Keys), o.Targets...)
			slices.SortFunc(o.Targets, func(a, b schemas.Key) int { return strings.Compare(a.String(), b.String()) })
			o.Targets = slices.Compact(o.Targets) // a merged model's */*/X/* inside its provider's
			o.Commanded = at
			o.Judge = &judgement{Version: uint64(at/1e9)<<20 | 1, Level: r.Level, Action: string(r.Action), IssuedAt: at,
				Before: share(rec.Breaching, rec.Healthy)}
			for _, t := range o.Targets {
				out = append(out, s.levelCommand(r, o, t, at, schemas.StateOpen, rec, slo))
			}
		case rec.Status == schemas.IncidentClosed:
			closed = true
			c := st.Closing[name] // cleared after the boundary (the effect judge reads it too)
			if c == nil {
				continue
			}
			for _, t := range c.Targets {
				out = append(out, s.levelCommand(r, c, t, at, schemas.StateClosed, rec, slo))
			}
		case o != nil && o.Commanded > 0 && at-o.Commanded >= int64(r.TTL)/2:
			o.Commanded = at
			for _, t := range o.Targets {
				out = append(out, s.levelCommand(r, o, t, at, schemas.StateOpen, rec, slo))
			}
		}
	}
	s.stats.Commands.Issued += int64(len(out))
	breaching := func(t schemas.Key) bool {
		if keys == nil {
			return true // a late summary: its breaker decided on data the stage no longer judges
		}
		for i := range keys {
			if keys[i].Status == schemas.StatusBreach && t.Matches(keys[i].Key) {
				return true
			}
		}
		return false
	}
	forward := func(c schemas.FuseCommand) {
		out = append(out, c)
		s.stats.Commands.Forwarded++
		ts := c.Target.String()
		if c.State == schemas.StateClosed {
			delete(st.Forwarded, ts)
		} else {
			st.Forwarded[ts] = c.ExpiresAtUnixNano
		}
		delete(st.Held, ts)
	}
	// A target whose last command expired without a close (its key went
	// quiet or was evicted, so its breaker stopped refreshing it) is
	// forgotten: nothing in effect is left to follow, and the state would
	// otherwise grow with every target ever seen.
	for ts, c := range st.Held {
		if c.ExpiresAtUnixNano <= at {
			delete(st.Held, ts)
		}
	}
	for ts, exp := range st.Forwarded {
		if exp <= at {
			delete(st.Forwarded, ts)
		}
	}
	for _, c := range cmds {
		ts := c.Target.String()
		switch {
		case s.coveredTarget(st, c.Target):
			// The level's command covers it.
			s.stats.Commands.Suppressed++
			if c.State == schemas.StateClosed {
				delete(st.Held, ts)
			} else {
				st.Held[ts] = c
			}
		case st.Forwarded[ts] > 0:
			forward(c) // its open went out: the rest of its life does too
		case c.State == schemas.StateOpen && breaching(c.Target):
			forward(c) // a trip of a key that breaches now
		default:
			// The breaker's lag behind a recovery its open never showed
			// (a refresh, a half-open, a close of a suppressed target).
			s.stats.Commands.Suppressed++
			if c.State == schemas.StateClosed {
				delete(st.Held, ts)
			} else {
				st.Held[ts] = c
			}
		}
	}
	if closed {
		// Per-key targets still open and still breaching under an
		// incident that closed: their breaker holds them again from now.
		var held []string
		for ts := range st.Held {
			held = append(held, ts)
		}
		slices.Sort(held)
		for _, ts := range held {
			c := st.Held[ts]
			if c.State != schemas.StateOpen || s.coveredTarget(st, c.Target) || c.ExpiresAtUnixNano <= at || !breaching(c.Target) {
				continue
			}
			forward(c)
		}
	}
	return out
}

// coveredTarget reports whether a per-key target carries the value of an
// open aggregate incident of the SLO whose level command went out (an
// incident open before its SLO got a command rule covers nothing: its
// keys' breakers go on writing).
func (s *Stage) coveredTarget(st *sloState, t schemas.Key) bool {
	for _, o := range st.Open {
		if o.Level < 0 || o.Commanded == 0 {
			continue
		}
		if v, ok := valueOf(t, levels[o.Level], s.cfg.Providers); ok && v == o.Value {
			return true
		}
	}
	return false
}
