package effect

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SnapshotFormat names the encoding MarshalBinary writes.
const SnapshotFormat = "fusebox.effect.state.v1"

// ErrSnapshot is wrapped by every UnmarshalBinary error.
var ErrSnapshot = errors.New("effect: bad snapshot")

// The snapshot is JSON (float64 values round-trip exactly) with the
// judgements sorted by target, so the same state gives the same bytes.
// The configuration is not in it: a snapshot restores into a judge whose
// evaluations were edited (pending judgements then end at the new count)
// or whose SLOs changed (a judgement of a removed SLO ends slo_removed).
type snapshot struct {
	Format     string       `json:"format"`
	Stats      Stats        `json:"stats"`
	Judgements []*judgement `json:"judgements"`
}

// MarshalBinary snapshots the judgements and counters for the engine's
// checkpoints.
func (j *Judge) MarshalBinary() ([]byte, error) {
	s := snapshot{Format: SnapshotFormat, Stats: j.stats, Judgements: make([]*judgement, 0, len(j.targets))}
	for _, g := range j.targets {
		s.Judgements = append(s.Judgements, g)
	}
	slices.SortFunc(s.Judgements, compareJudgements)
	return json.Marshal(&s)
}

// UnmarshalBinary replaces the state with a snapshot written by
// MarshalBinary. On error the judge is left unchanged; errors wrap
// ErrSnapshot.
func (j *Judge) UnmarshalBinary(data []byte) error {
	var s snapshot
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if s.Format != SnapshotFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrSnapshot, s.Format, SnapshotFormat)
	}
	targets := make(map[slot]*judgement, len(s.Judgements))
	for i, g := range s.Judgements {
		if g == nil {
			return fmt.Errorf("%w: judgements[%d]: null", ErrSnapshot, i)
		}
		if _, dup := targets[g.slot()]; dup {
			return fmt.Errorf("%w: judgements[%d].target: %s repeated", ErrSnapshot, i, g.Target.String())
		}
		targets[g.slot()] = g
	}
	j.targets, j.stats = targets, s.Stats
	return nil
}
