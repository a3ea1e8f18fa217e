package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/breaker"
	"github.com/fusebox-dev/fusebox/processors/rollup"
	"github.com/fusebox-dev/fusebox/schemas"
)

// StateID identifies what the windows of SLO s hold: its processor kind,
// its match, the key dimensions and span attributes (what a key and a
// score are), and the parameters of its section that shape its windows
// (processors.Config.StateShape: metric, windows, interval, caps, variants,
// ...). Parameters that only judge what the windows hold (budgets, p,
// alpha, limits, factors, minimum counts, streak lengths) are left out:
// editing them keeps the state. 12 hex characters of a SHA-256.
//
// An SLO that counts failed answers (processors.AnswersUser) also hashes
// the answers section: what makes a call bad is in its windows. Other
// SLOs' ids leave it out, so they keep their ids.
func StateID(f *File, s SLO) string {
	shape := struct {
		Kind       string
		Match      schemas.Match
		Dimensions []string
		Attributes any
		Section    any
		Answers    *schemas.Answers `json:",omitempty"`
	}{Match: s.Match, Dimensions: f.Keys.Dimensions, Attributes: f.Attributes}
	if sec, ok := s.Processor(); ok {
		shape.Kind, shape.Section = sec.Kind.Name, sec.Config.StateShape()
		if u, ok := sec.Config.(processors.AnswersUser); ok && u.UsesAnswers() {
			a := f.Answers.Normalized()
			shape.Answers = &a
		}
	}
	return hash12(shape)
}

// rollupStateID is StateID for the rollups. The answers section is left
// out: the rollups' counters of failed answers are a report, not a
// decision, and resetting every key's open minute on an answers edit
// would undercount that minute's calls, errors and samples for every key.
// After an answers edit the minute open at the checkpoint mixes the two
// definitions in its failed-answer counters only
// (docs/state-and-upgrades.md). The SLOs that count failed answers keep
// the answers section in their state id (StateID).
func rollupStateID(f *File) string {
	return hash12(struct {
		Kind       string
		Dimensions []string
		Attributes any
		Max        int
	}{rollup.Name, f.Keys.Dimensions, f.Attributes, f.Rollups.MaxSamplesPerMinute})
}

// BreakerStateID identifies the shape of the breaker's targets: the
// dimensions each rule's targets keep. The rest of the policy (k of n,
// cool-downs, actions, rules added or removed) can change under a kept
// state.
func BreakerStateID(f *File) string {
	dims := [][]string{f.Breaker.Target}
	for _, r := range f.Breaker.Rules {
		if r.Target != nil {
			dims = append(dims, r.Target)
		}
	}
	for i := range dims {
		dims[i] = slices.Sorted(slices.Values(dims[i]))
	}
	slices.SortFunc(dims, slices.Compare)
	dims = slices.CompactFunc(dims, slices.Equal)
	return hash12(struct {
		Kind   string
		Target [][]string
	}{breaker.Name, dims})
}

func hash12(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("config: state id: " + err.Error()) // plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// PlanEdit is what restarting a deployment that checkpointed under old
// with the file new would keep and reset (engine.PlanChanges on both
// files' state ids): what `fusebox config diff` prints and what the
// keyed stage logs when it restores.
func PlanEdit(old, new *File) (engine.RestoreReport, error) {
	ow, err := WorkerConfig(old)
	if err != nil {
		return engine.RestoreReport{}, err
	}
	nw, err := WorkerConfig(new)
	if err != nil {
		return engine.RestoreReport{}, err
	}
	var prev []engine.StateEntry
	for _, s := range ow.SLOs {
		prev = append(prev, engine.StateEntry{SLO: s.Meta.SLO, StateID: s.StateID})
	}
	return engine.PlanChanges(prev, ow.BreakerStateID, nw), nil
}
