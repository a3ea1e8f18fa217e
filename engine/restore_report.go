package engine

import (
	"strings"
)

// Change is what a restore (or a configuration edit) does to the state of
// one SLO or of the breaker.
type Change string

// The changes.
const (
	// Kept: the state is restored; what the windows hold did not change.
	Kept Change = "kept"
	// Reset: the SLO (or the breaker) stays but starts empty: what its
	// windows hold (or the breaker's target dimensions) changed.
	Reset Change = "reset"
	// Added: a new SLO, starting empty.
	Added Change = "added"
	// Removed: an SLO no longer configured; its state is dropped.
	Removed Change = "removed"
)

// SLOChange is the Change of one SLO.
type SLOChange struct {
	SLO    string
	Change Change
}

// RestoreReport says what a restore kept and what it reset.
type RestoreReport struct {
	// SLOs lists the SLOs of the new configuration in order, then the
	// removed ones.
	SLOs []SLOChange
	// Breaker is Kept or Reset; "" when there was no breaker state.
	Breaker Change
	// FormatVersion is the snapshot's format version.
	FormatVersion int
}

// Full reports whether every SLO's state and the breaker's were kept.
func (r RestoreReport) Full() bool {
	for _, c := range r.SLOs {
		if c.Change != Kept {
			return false
		}
	}
	return r.Breaker != Reset
}

// Names returns the SLOs with change c, comma-separated ("" for none).
func (r RestoreReport) Names(c Change) string {
	var n []string
	for _, s := range r.SLOs {
		if s.Change == c {
			n = append(n, s.SLO)
		}
	}
	return strings.Join(n, ",")
}

// StateEntry names one SLO's state: its name and the id of what its
// windows hold.
type StateEntry struct {
	SLO, StateID string
}

// PlanChanges is what restoring state written under the old SLO entries
// (and breaker state id) into cfg would do, without a snapshot: the
// report `fusebox config diff` prints before a deploy. It applies the rules
// of RestoreWorker.
func PlanChanges(old []StateEntry, oldBreakerID string, cfg WorkerConfig) RestoreReport {
	var rep RestoreReport
	prev := map[string]string{}
	for _, e := range old {
		prev[e.SLO] = e.StateID
	}
	for _, s := range cfg.SLOs {
		id, ok := prev[s.Meta.SLO]
		delete(prev, s.Meta.SLO)
		c := Added
		switch {
		case ok && id == s.StateID:
			c = Kept
		case ok:
			c = Reset
		}
		rep.SLOs = append(rep.SLOs, SLOChange{SLO: s.Meta.SLO, Change: c})
	}
	for _, e := range old {
		if _, gone := prev[e.SLO]; gone {
			rep.SLOs = append(rep.SLOs, SLOChange{SLO: e.SLO, Change: Removed})
		}
	}
	if cfg.NewBreaker != nil {
		rep.Breaker = Kept
		if oldBreakerID != cfg.BreakerStateID {
			rep.Breaker = Reset
		}
	}
	return rep
}
