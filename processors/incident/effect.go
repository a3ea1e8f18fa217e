package incident

import (
	"github.com/fusebox-dev/fusebox/schemas"
)

// The effect of a level command is judged on the level's traffic: the
// share of the attributed value's keys that breach. Before is that share
// at the boundary the command was issued; the command has recovered at
// the first later decided boundary where some key of the value is healthy
// and none breaches (outcome recovered, status ok), and not recovered when
// Config.EffectEvaluations boundaries passed with some still breaching
// (not_recovered, breach) — or when the incident closed first with some
// still breaching; with no key of the value judged by then (the trip
// stopped the traffic) the outcome is no_traffic (insufficient_data). One effect verdict per level target of the incident's
// opening command, in the layout of processors/effect's (processor
// "effect", metric "breaching_share", method "<action>:<outcome>", details
// command_version … superseded_by), so the fuse_effects view reads it.
// Refreshes are the same command's incarnation and are not judged again.

// effectMetric is the effect verdicts' metric.
const effectMetric = "breaching_share"

// EffectDetailNames is processors/effect.DetailNames (not imported: a
// processor package imports no other processor's; engine's
// TestIncidentEffectDetailsAreTheEffectProcessors checks they are equal).
var EffectDetailNames = []string{
	"command_version", "command_level", "before", "after", "after_status", "recovered",
	"evaluations", "max_evaluations", "evaluations_with_traffic", "scope_keys", "superseded_by",
}

// judgement is the pending effect judgement of an incident's command.
type judgement struct {
	Version  uint64  `json:"version"`
	Level    int     `json:"level"`
	Action   string  `json:"action"`
	IssuedAt int64   `json:"issued_at"`
	Before   float64 `json:"before"`
	Evals    int     `json:"evaluations"`
	Traffic  int     `json:"with_traffic"`
}

// share is the breaching share of b breaching among b+h keys (0 without keys).
func share(b, h int64) float64 {
	if b+h == 0 {
		return 0
	}
	return float64(b) / float64(b+h)
}

// judgeEffects moves the judgement of every aggregate incident that has
// one, given its record at the boundary (recs), and returns the effect
// verdicts decided there.
func (s *Stage) judgeEffects(slo string, st *sloState, at int64, recs []schemas.Incident) []schemas.Verdict {
	var out []schemas.Verdict
	for i := range recs {
		rec := &recs[i]
		if rec.Dimension == schemas.DimKey {
			continue
		}
		name := rec.Dimension + "=" + rec.Value
		o := st.Open[name]
		if o == nil {
			o = st.Closing[name]
		}
		if o == nil || o.Judge == nil || o.Judge.IssuedAt >= at {
			continue
		}
		j := o.Judge
		j.Evals++
		if rec.Breaching+rec.Healthy > 0 {
			j.Traffic++
		}
		after := share(rec.Breaching, rec.Healthy)
		outcome := ""
		ending := j.Evals >= s.cfg.EffectEvaluations || rec.Status == schemas.IncidentClosed || rec.MergedInto != ""
		switch {
		case rec.Breaching == 0 && rec.Healthy > 0:
			outcome = "recovered" // healthy traffic of the level, none breaching
		case rec.Breaching+rec.Healthy == 0 && ending:
			outcome = "no_traffic" // the level's keys were not judged since (its trip stopped them)
		case rec.Breaching > 0 && ending:
			outcome = "not_recovered"
		}
		if outcome == "" {
			continue
		}
		o.Judge = nil
		status, recovered, afterStatus := schemas.StatusBreach, 0.0, 3.0
		switch outcome {
		case "recovered":
			status, recovered, afterStatus = schemas.StatusOK, 1, 1
		case "no_traffic":
			status, afterStatus = schemas.StatusInsufficientData, 0
		}
		for _, t := range o.Targets {
			v := schemas.Verdict{
				ID:        schemas.VerdictID("effect", slo, effectMetric, t, int64(j.Version), s.cfg.ConfigVersion),
				Processor: "effect", SLO: slo, Metric: effectMetric, Key: t,
				WindowStartUnixNano: j.IssuedAt, WindowEndUnixNano: at,
				Value: after, Status: status, Method: j.Action + ":" + outcome, N: rec.Breaching + rec.Healthy,
				ConfigVersion: s.cfg.ConfigVersion,
			}
			vals := []float64{float64(j.Version), float64(j.Level), j.Before, after, afterStatus, recovered,
				float64(j.Evals), float64(s.cfg.EffectEvaluations), float64(j.Traffic), float64(rec.Breaching + rec.Healthy), 0}
			for k, n := range EffectDetailNames {
				v.Details = append(v.Details, schemas.Detail{Name: n, Value: vals[k]})
			}
			out = append(out, v)
		}
	}
	return out
}
