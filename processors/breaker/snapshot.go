package breaker

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
)

// SnapshotFormat names the encoding MarshalBinary writes.
const SnapshotFormat = "fusebox.breaker.state.v1"

// ErrSnapshot is wrapped by every UnmarshalBinary error.
var ErrSnapshot = errors.New("breaker: bad snapshot")

// The snapshot is JSON (encoding/json; float64 values round-trip exactly)
// with targets sorted by key and series by (rule, processor, SLO, metric,
// key), so the same state always gives the same bytes. Rules are named by
// (processor, slo, metric, action), not by position: a snapshot restores
// into a breaker whose policy was edited, dropping the histories of rules
// that no longer exist and trimming histories to the rule's current n. The
// action of an open target is stored by value and survives its rule's
// removal until the target closes.
type snapshot struct {
	Format  string       `json:"format"`
	Clock   int64        `json:"clock"`
	Stats   Stats        `json:"stats"`
	Targets []targetSnap `json:"targets"`
}

type reasonSnap struct {
	VerdictID string `json:"verdict_id"`
	Text      string `json:"text"`
}

type seriesSnap struct {
	Rule      string      `json:"rule"`
	Processor string      `json:"processor"`
	SLO       string      `json:"slo"`
	Metric    string      `json:"metric"`
	Key       schemas.Key `json:"key"`
	LastEnd   int64       `json:"last_end"`
	Entries   []entry     `json:"entries"`
}

type signalSnap struct {
	Processor string        `json:"processor"`
	SLO       string        `json:"slo"`
	Metric    string        `json:"metric"`
	Keys      []schemas.Key `json:"keys"`
	Healthy   []reasonSnap  `json:"healthy"`
	HealthyAt int64         `json:"healthy_at"`
	BlockedAt int64         `json:"blocked_at"`
	// The starvation fields were added after the first release of this
	// format (absent: not starved).
	StarvedAt    int64 `json:"starved_at,omitempty"`
	StarvedSince int64 `json:"starved_since,omitempty"`
	Probes       int64 `json:"probes,omitempty"`
	MinSamples   int64 `json:"min_samples,omitempty"`
	FedAt        int64 `json:"fed_at,omitempty"`
}

type targetSnap struct {
	Key       schemas.Key          `json:"key"`
	State     schemas.BreakerState `json:"state"`
	Active    active               `json:"active"`
	Base      uint64               `json:"base"`
	Seq       uint64               `json:"seq"`
	Trips     int                  `json:"trips"`
	OpenUntil int64                `json:"open_until"`
	ClosedAt  int64                `json:"closed_at"`
	Incident  string               `json:"incident"`
	Reasons   []reasonSnap         `json:"reasons"`
	SLOs      []string             `json:"slos"`
	Healthy   []reasonSnap         `json:"healthy"`
	HealthyAt int64                `json:"healthy_at"`
	// Tripped and HalfOpenAt were added after the first release of this
	// format; a snapshot without them restores with no tripping series
	// (the old "any ok closes" rule, see target.healthy).
	Tripped    []signalSnap `json:"tripped,omitempty"`
	HalfOpenAt int64        `json:"half_open_at,omitempty"`
	StateSince int64        `json:"state_since,omitempty"`
	LastIssued int64        `json:"last_issued"`
	Issued     bool         `json:"issued"`
	LastActive int64        `json:"last_active"`
	Clock      int64        `json:"clock"`
	Series     []seriesSnap `json:"series"`
}

func toReasonSnaps(rs []schemas.Reason) []reasonSnap {
	out := make([]reasonSnap, len(rs))
	for i, r := range rs {
		out[i] = reasonSnap{VerdictID: r.VerdictID, Text: r.Text}
	}
	return out
}

func fromReasonSnaps(rs []reasonSnap) []schemas.Reason {
	if len(rs) == 0 {
		return nil
	}
	out := make([]schemas.Reason, len(rs))
	for i, r := range rs {
		out[i] = schemas.Reason{VerdictID: r.VerdictID, Text: r.Text}
	}
	return out
}

// MarshalBinary snapshots the whole state (targets, histories, clock,
// counters) for the engine's checkpoints. The policy is not included.
func (b *Breaker) MarshalBinary() ([]byte, error) {
	s := snapshot{Format: SnapshotFormat, Clock: b.clock, Stats: b.Stats(), Targets: make([]targetSnap, 0, len(b.targets))}
	for _, tg := range b.targets {
		ts := targetSnap{
			Key: tg.key, State: tg.state, Active: tg.active, Base: tg.base, Seq: tg.seq, Trips: tg.trips,
			OpenUntil: tg.openUntil, ClosedAt: tg.closedAt, Incident: tg.incident,
			Reasons: toReasonSnaps(tg.reasons), SLOs: slices.Clone(tg.slos), Healthy: toReasonSnaps(tg.healthy), HealthyAt: tg.healthyAt,
			LastIssued: tg.lastIssued, Issued: tg.issued, LastActive: tg.lastActive, Clock: tg.clock,
			Series: make([]seriesSnap, 0, len(tg.series)),
		}
		if ts.SLOs == nil {
			ts.SLOs = []string{}
		}
		ts.HalfOpenAt, ts.StateSince = tg.halfOpenAt, tg.stateSince
		for _, g := range tg.tripped {
			ts.Tripped = append(ts.Tripped, signalSnap{Processor: g.Processor, SLO: g.SLO, Metric: g.Metric, Keys: slices.Clone(g.Keys), Healthy: toReasonSnaps(g.Healthy), HealthyAt: g.HealthyAt, BlockedAt: g.BlockedAt,
				StarvedAt: g.StarvedAt, StarvedSince: g.StarvedSince, Probes: g.Probes, MinSamples: g.MinSamples, FedAt: g.FedAt})
		}
		for k, se := range tg.series {
			ts.Series = append(ts.Series, seriesSnap{
				Rule: b.rules[k.rule].id, Processor: k.processor, SLO: k.slo, Metric: k.metric, Key: k.key,
				LastEnd: se.lastEnd, Entries: slices.Clone(se.entries),
			})
		}
		slices.SortFunc(ts.Series, func(a, c seriesSnap) int {
			for _, p := range [][2]string{{a.Rule, c.Rule}, {a.Processor, c.Processor}, {a.SLO, c.SLO}, {a.Metric, c.Metric}, {a.Key.String(), c.Key.String()}} {
				if d := strings.Compare(p[0], p[1]); d != 0 {
					return d
				}
			}
			return 0
		})
		s.Targets = append(s.Targets, ts)
	}
	slices.SortFunc(s.Targets, func(a, c targetSnap) int { return strings.Compare(a.Key.String(), c.Key.String()) })
	return json.Marshal(&s)
}

// UnmarshalBinary replaces the state with a snapshot written by
// MarshalBinary. On error the breaker is left unchanged; errors wrap
// ErrSnapshot.
func (b *Breaker) UnmarshalBinary(data []byte) error {
	var s snapshot
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if s.Format != SnapshotFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrSnapshot, s.Format, SnapshotFormat)
	}
	targets := make(map[schemas.Key]*target, len(s.Targets))
	for i, ts := range s.Targets {
		if !ts.State.Valid() {
			return fmt.Errorf("%w: targets[%d].state: unknown state %q", ErrSnapshot, i, ts.State)
		}
		if _, dup := targets[ts.Key]; dup {
			return fmt.Errorf("%w: targets[%d].key: %s repeated", ErrSnapshot, i, ts.Key.String())
		}
		tg := &target{
			key: ts.Key, state: ts.State, active: ts.Active, base: ts.Base, seq: ts.Seq, trips: ts.Trips,
			openUntil: ts.OpenUntil, closedAt: ts.ClosedAt, incident: ts.Incident,
			reasons: fromReasonSnaps(ts.Reasons), slos: ts.SLOs, healthy: fromReasonSnaps(ts.Healthy), healthyAt: ts.HealthyAt,
			lastIssued: ts.LastIssued, issued: ts.Issued, lastActive: ts.LastActive, clock: ts.Clock,
			series: make(map[seriesKey]*series, len(ts.Series)), halfOpenAt: ts.HalfOpenAt, stateSince: ts.StateSince,
		}
		for _, g := range ts.Tripped {
			tg.tripped = append(tg.tripped, signal{Processor: g.Processor, SLO: g.SLO, Metric: g.Metric, Keys: g.Keys, Healthy: fromReasonSnaps(g.Healthy), HealthyAt: g.HealthyAt, BlockedAt: g.BlockedAt,
				StarvedAt: g.StarvedAt, StarvedSince: g.StarvedSince, Probes: g.Probes, MinSamples: g.MinSamples, FedAt: g.FedAt})
		}
		for _, ss := range ts.Series {
			ri := b.ruleIndex(ss.Rule)
			if ri < 0 {
				continue // the rule left the policy
			}
			es := ss.Entries
			if n := b.rules[ri].n; len(es) > n {
				es = es[len(es)-n:]
			}
			tg.series[seriesKey{rule: ri, processor: ss.Processor, slo: ss.SLO, metric: ss.Metric, key: ss.Key}] =
				&series{entries: slices.Clone(es), lastEnd: ss.LastEnd}
		}
		targets[ts.Key] = tg
	}
	b.targets = targets
	b.clock = s.Clock
	b.stats = s.Stats
	b.stats.Targets = 0
	return nil
}
