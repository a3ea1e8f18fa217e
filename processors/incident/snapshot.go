package incident

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
)

// SnapshotFormat names the encoding MarshalBinary writes.
const SnapshotFormat = "fusebox.incident.state.v1"

// ErrSnapshot is wrapped by every UnmarshalBinary error.
var ErrSnapshot = errors.New("incident: bad snapshot")

// The snapshot is JSON (float64 round-trips exactly) with every map
// written as a list in a fixed order, so the same state gives the same
// bytes.
type snapshot struct {
	Format string    `json:"format"`
	Parts  int       `json:"partitions"`
	Stats  Stats     `json:"stats"`
	SLOs   []sloSnap `json:"slos"`
}

type sloSnap struct {
	SLO string `json:"slo"`
	sloState
	PendingList []*pending   `json:"pending"`
	StreakList  []streakSnap `json:"streaks"`
	OpenList    []*open      `json:"open"`
}

type streakSnap struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// MarshalBinary returns the stage's state.
func (s *Stage) MarshalBinary() ([]byte, error) {
	snap := snapshot{Format: SnapshotFormat, Parts: s.cfg.Partitions, Stats: s.stats}
	for name, st := range s.slos {
		ss := sloSnap{SLO: name, sloState: *st}
		ss.Streak = nil
		for at := range st.Pending {
			ss.PendingList = append(ss.PendingList, st.Pending[at])
		}
		slices.SortFunc(ss.PendingList, func(a, b *pending) int { return cmpInt(a.At, b.At) })
		for n, v := range st.Streak {
			ss.StreakList = append(ss.StreakList, streakSnap{n, v})
		}
		slices.SortFunc(ss.StreakList, func(a, b streakSnap) int { return strings.Compare(a.Name, b.Name) })
		ss.OpenList = sortedOpen(st)
		snap.SLOs = append(snap.SLOs, ss)
	}
	slices.SortFunc(snap.SLOs, func(a, b sloSnap) int { return strings.Compare(a.SLO, b.SLO) })
	return json.Marshal(snap)
}

// UnmarshalBinary replaces the stage's state with a snapshot's. The
// snapshot must be of the same number of partitions; otherwise (a changed
// topics.keyed_partitions) it fails with ErrSnapshot, and engine.Incidents
// starts the stage empty, logging why.
func (s *Stage) UnmarshalBinary(b []byte) error {
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if snap.Format != SnapshotFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrSnapshot, snap.Format, SnapshotFormat)
	}
	if snap.Parts != s.cfg.Partitions {
		return fmt.Errorf("%w: %d partitions, the stage has %d", ErrSnapshot, snap.Parts, s.cfg.Partitions)
	}
	slos := map[string]*sloState{}
	for _, ss := range snap.SLOs {
		st := ss.sloState
		if len(st.Latest) != s.cfg.Partitions {
			return fmt.Errorf("%w: SLO %q has %d partitions", ErrSnapshot, ss.SLO, len(st.Latest))
		}
		st.Pending, st.Streak, st.Open, st.Closing = map[int64]*pending{}, map[string]int{}, map[string]*open{}, map[string]*open{}
		if st.Held == nil {
			st.Held = map[string]schemas.FuseCommand{}
		}
		if st.Forwarded == nil {
			st.Forwarded = map[string]int64{}
		}
		for _, p := range ss.PendingList {
			if len(p.Seen) != s.cfg.Partitions {
				return fmt.Errorf("%w: SLO %q: a pending boundary has %d partitions", ErrSnapshot, ss.SLO, len(p.Seen))
			}
			st.Pending[p.At] = p
		}
		for _, k := range ss.StreakList {
			st.Streak[k.Name] = k.N
		}
		for _, o := range ss.OpenList {
			if o.Level >= len(levels) {
				return fmt.Errorf("%w: SLO %q: incident %q of unknown level %d", ErrSnapshot, ss.SLO, o.Name, o.Level)
			}
			st.Open[o.Name] = o
		}
		slos[ss.SLO] = &st
	}
	s.slos, s.stats = slos, snap.Stats
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
