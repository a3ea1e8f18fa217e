package incident

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Config configures the incident stage. Zero values take the defaults
// named on each field.
type Config struct {
	// Partitions is the number of keyed partitions (topics.keyed_partitions):
	// a boundary is decided once every one of them has reached it.
	// Required.
	Partitions int
	// SLOs lists the SLOs to attribute; empty: every SLO whose summaries
	// arrive.
	SLOs []string
	// Alpha is the family-wise error rate of one boundary's tests (Holm
	// over the values tested). Default 0.01.
	Alpha float64
	// MinKeys is how many breaching keys a value needs to be tested (and
	// the fewest one attribution explains). Default 2.
	MinKeys int
	// MinPurity is the smallest share of a value's keys that must breach
	// for it to be attributed. Default 0.5.
	MinPurity float64
	// OpenAfter is how many consecutive decided boundaries must find an
	// attribution before it opens an incident. Default 2.
	OpenAfter int
	// CloseAfter is how many consecutive decided boundaries without it
	// close an incident. Default 3.
	CloseAfter int
	// MaxKeys caps the keys an incident record lists (Incident.Keys; the
	// counts are exact). Default 50.
	MaxKeys int
	// Providers maps a model to its provider, for the provider
	// dimension; a model not in it is not attributed by provider.
	Providers map[string]string
	// ConfigVersion is copied into every record.
	ConfigVersion string
	// Commands lists the SLOs whose fuse commands the stage writes (see
	// CommandRule).
	Commands []CommandRule
	// MaxWait is how many undecided boundaries an SLO may hold while a
	// keyed partition lags (a stuck worker, a process still restoring, a
	// worker without the SLO): beyond it, the oldest is decided with the
	// partitions that reported it, its records marked Partial, and the
	// lagging partitions are named by Lagging. Their summaries of decided
	// boundaries then arrive late: their keys are not judged any more,
	// their commands go through at once (Stats.Late). So a trip waits at
	// most MaxWait evaluations for the slowest partition. Default 30: a
	// backlog's catch-up makes partitions diverge in event time (each
	// reads its own at its own pace), and a smaller bound decides its
	// boundaries partially.
	MaxWait int
	// EffectEvaluations is how many decided boundaries after a level
	// command its effect is waited for (effect.go). Default 10 (the effect
	// section's evaluations).
	EffectEvaluations int
}

func (c *Config) defaults() error {
	if c.Partitions <= 0 {
		return errors.New("incident: Partitions must be positive")
	}
	if c.Alpha == 0 {
		c.Alpha = 0.01
	}
	if c.MinKeys == 0 {
		c.MinKeys = 2
	}
	if c.MinPurity == 0 {
		c.MinPurity = 0.5
	}
	if c.OpenAfter == 0 {
		c.OpenAfter = 2
	}
	if c.CloseAfter == 0 {
		c.CloseAfter = 3
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = 50
	}
	if c.EffectEvaluations == 0 {
		c.EffectEvaluations = 10
	}
	if c.MaxWait == 0 {
		c.MaxWait = 30
	}
	if c.MaxWait < 1 {
		return errors.New("incident: max_wait must be positive")
	}
	if c.EffectEvaluations < 1 {
		return errors.New("incident: effect evaluations must be positive")
	}
	c.Commands = slices.Clone(c.Commands)
	for i := range c.Commands {
		r := &c.Commands[i]
		if r.Action == "" {
			r.Action, r.Level = schemas.ActionTrip, 2
		}
		if r.TTL == 0 {
			r.TTL = 15 * time.Minute
		}
		if r.TTL < 2 {
			return fmt.Errorf("incident: command rule of SLO %q: ttl must be positive", r.SLO)
		}
	}
	switch {
	case !(c.Alpha > 0 && c.Alpha < 1):
		return fmt.Errorf("incident: alpha %v must be in (0, 1)", c.Alpha)
	case c.MinKeys < 2:
		return fmt.Errorf("incident: min_keys %d must be at least 2 (one key is the per-key breaker's)", c.MinKeys)
	case !(c.MinPurity > 0 && c.MinPurity <= 1):
		return fmt.Errorf("incident: min_purity %v must be in (0, 1]", c.MinPurity)
	case c.OpenAfter < 1 || c.CloseAfter < 1 || c.MaxKeys < 1:
		return errors.New("incident: open_after, close_after and max_keys must be positive")
	}
	return nil
}

// Stats counts what the stage did. Counters only grow.
type Stats struct {
	Summaries  int64 `json:"summaries"`
	Duplicates int64 `json:"duplicates"`
	Decided    int64 `json:"decided"`
	Opened     int64 `json:"opened"`
	Closed     int64 `json:"closed"`
	// Partial counts the boundaries decided without a lagging partition
	// (Config.MaxWait); Late the summaries that came after their boundary
	// was decided.
	Partial int64 `json:"partial"`
	Late    int64 `json:"late"`
	// Commands counts the fuse commands (CommandRule).
	Commands Commands `json:"commands"`
}

// Stage is the incident stage of one deployment (or of the SLOs one
// process owns). It is not safe for concurrent use.
type Stage struct {
	cfg   Config
	slos  map[string]*sloState
	stats Stats
	// lagging collects, since the last Lagging call, the partial
	// decisions' descriptions (not in the snapshot: they are for the log).
	lagging []string
}

// Lagging returns and forgets what the partial decisions since the last
// call were: one line per SLO and set of missing partitions, for the log.
func (s *Stage) Lagging() []string {
	l := s.lagging
	s.lagging = nil
	return l
}

type sloState struct {
	Processor string `json:"processor"`
	// Latest is each partition's newest summary boundary (MinInt64: none).
	Latest []int64 `json:"latest"`
	// Decided is the last decided boundary (MinInt64: none).
	Decided int64              `json:"decided"`
	Pending map[int64]*pending `json:"-"`
	// Streak counts, per attribution name not yet open, the consecutive
	// decided boundaries that found it.
	Streak map[string]int   `json:"streak"`
	Open   map[string]*open `json:"-"`
	// Held is, per per-key target (Key.String), the newest command of it
	// suppressed while an incident covers it; Forwarded the targets whose
	// open command went out, with the expiry (Unix ns) of the newest
	// command forwarded (see CommandRule). Entries whose command expired
	// are dropped at the next boundary with commands.
	Held      map[string]schemas.FuseCommand `json:"held"`
	Forwarded map[string]int64               `json:"forwarded"`
	// Closing holds the aggregate incidents closed at the boundary being
	// decided, for their close commands (not in the snapshot: it is
	// empty between boundaries).
	Closing map[string]*open `json:"-"`
}

type pending struct {
	At       int64                 `json:"at"`
	Seen     []bool                `json:"seen"`
	Keys     []schemas.SummaryKey  `json:"keys"`
	Commands []schemas.FuseCommand `json:"commands"`
}

// open is one open incident. Level is the index in levels, or -1 for a
// key incident (Key is then its key).
type open struct {
	Name      string      `json:"name"`
	Level     int         `json:"level"`
	Value     string      `json:"value"`
	Key       schemas.Key `json:"key"`
	ID        string      `json:"id"`
	First     int64       `json:"first"`
	Last      int64       `json:"last"`
	Breaching int64       `json:"breaching"`
	Misses    int         `json:"misses"`
	PValue    float64     `json:"p_value"`
	// Targets are the targets of its level commands, Commanded the
	// boundary of the last one (0: none).
	Targets   []schemas.Key `json:"targets,omitempty"`
	Commanded int64         `json:"commanded,omitempty"`
	// Judge is the pending effect judgement of its opening command.
	Judge *judgement `json:"judge,omitempty"`
}

// New returns an empty stage.
func New(cfg Config) (*Stage, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Stage{cfg: cfg, slos: map[string]*sloState{}}, nil
}

// Stats returns the stage's counters.
func (s *Stage) Stats() Stats { return s.stats }

// Add takes one summary and returns the incident records, fuse commands
// (unsigned) and effect verdicts of the level commands of every boundary
// it completes, in boundary order
// (empty when it completes none). A summary from a partition outside [0,
// Partitions) is an error.
func (s *Stage) Add(sum schemas.EvalSummary) (schemas.Output, error) {
	var out schemas.Output
	if sum.Partition < 0 || int(sum.Partition) >= s.cfg.Partitions {
		return out, fmt.Errorf("incident: summary of partition %d, the stage has %d", sum.Partition, s.cfg.Partitions)
	}
	if len(s.cfg.SLOs) > 0 && !slices.Contains(s.cfg.SLOs, sum.SLO) {
		// Not attributed here (a process with an older SLO list): its
		// breaker's commands go out as the worker decided them.
		out.Commands = append(out.Commands, sum.Commands...)
		s.stats.Commands.Forwarded += int64(len(sum.Commands))
		return out, nil
	}
	s.stats.Summaries++
	st := s.slos[sum.SLO]
	if st == nil {
		st = newSLOState(s.cfg.Partitions)
		s.slos[sum.SLO] = st
	}
	if st.Processor == "" {
		st.Processor = sum.Processor
	}
	p := int(sum.Partition)
	if sum.AtUnixNano <= st.Latest[p] && (sum.AtUnixNano <= st.Decided || st.Pending[sum.AtUnixNano] == nil || st.Pending[sum.AtUnixNano].Seen[p]) {
		s.stats.Duplicates++
		return out, nil
	}
	if sum.AtUnixNano <= st.Decided {
		// Late: its boundary was decided without this partition
		// (MaxWait). Its keys are not judged any more; its breaker's
		// commands go through the command path at once.
		st.Latest[p] = max(st.Latest[p], sum.AtUnixNano)
		s.stats.Late++
		out.Commands = append(out.Commands, s.commands(sum.SLO, st, st.Decided, nil, nil, sum.Commands)...)
		return out, nil
	}
	pd := st.Pending[sum.AtUnixNano]
	if pd == nil {
		pd = &pending{At: sum.AtUnixNano, Seen: make([]bool, s.cfg.Partitions)}
		st.Pending[sum.AtUnixNano] = pd
	}
	if pd.Seen[p] {
		s.stats.Duplicates++
		return out, nil
	}
	pd.Seen[p] = true
	pd.Keys = append(pd.Keys, sum.Keys...)
	pd.Commands = append(pd.Commands, sum.Commands...)
	st.Latest[p] = sum.AtUnixNano
	ready := slices.Min(st.Latest)
	var ats []int64
	for at := range st.Pending {
		ats = append(ats, at)
	}
	slices.Sort(ats)
	for i, at := range ats {
		partial := false
		if at > ready {
			// Undecided for a lagging partition: decide it anyway once
			// more than MaxWait boundaries wait.
			if len(ats)-i <= s.cfg.MaxWait {
				break
			}
			partial = true
		}
		pd := st.Pending[at]
		delete(st.Pending, at)
		// Partitions' keys are disjoint (a tenant lives in one); sorting
		// makes the merge independent of the arrival order.
		slices.SortFunc(pd.Keys, func(a, b schemas.SummaryKey) int { return strings.Compare(a.Key.String(), b.Key.String()) })
		// Commands in target order (partitions' targets are disjoint).
		slices.SortStableFunc(pd.Commands, func(a, b schemas.FuseCommand) int { return strings.Compare(a.Target.String(), b.Target.String()) })
		recs := s.decide(sum.SLO, st, at, pd.Keys)
		if partial {
			var missing []int
			for q, seen := range pd.Seen {
				if !seen && st.Latest[q] < at {
					missing = append(missing, q)
				}
			}
			s.stats.Partial++
			s.lagging = append(s.lagging, fmt.Sprintf("SLO %q: boundary %d decided without keyed partitions %v, which lag by more than max_wait %d evaluations",
				sum.SLO, at, missing, s.cfg.MaxWait))
			for j := range recs {
				recs[j].Partial = true
			}
		}
		out.Incidents = append(out.Incidents, recs...)
		out.Commands = append(out.Commands, s.commands(sum.SLO, st, at, pd.Keys, recs, pd.Commands)...)
		out.Verdicts = append(out.Verdicts, s.judgeEffects(sum.SLO, st, at, recs)...)
		clear(st.Closing)
		st.Decided = at
		s.stats.Decided++
	}
	return out, nil
}

func newSLOState(partitions int) *sloState {
	st := &sloState{Latest: make([]int64, partitions), Decided: math.MinInt64,
		Pending: map[int64]*pending{}, Streak: map[string]int{}, Open: map[string]*open{},
		Held: map[string]schemas.FuseCommand{}, Forwarded: map[string]int64{}, Closing: map[string]*open{}}
	for i := range st.Latest {
		st.Latest[i] = math.MinInt64
	}
	return st
}
