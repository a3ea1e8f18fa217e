package ui

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Store keeps the recent verdicts and fuse commands for the page, bounded
// by its Config. It is an engine sink (Write, Flush, Close) that never
// fails or blocks for long; safe for concurrent use.
type Store struct {
	cfg Config

	mu      sync.Mutex
	seq     uint64 // update counter: the recency of series and targets
	series  map[seriesID]*series
	targets map[schemas.Key]*target
	// incidents holds each incident's newest record (incidents.go).
	incidents map[string]*incidentEntry
	// counters, for the page and the tests
	verdicts, commands           int64
	droppedSeries, droppedTarget int64
}

type seriesID struct {
	processor, slo, metric string
	key                    schemas.Key
}

type series struct {
	id     seriesID
	points []Point // ascending T, at most MaxPoints
	latest *schemas.Verdict
	seq    uint64
}

type target struct {
	key  schemas.Key
	cmds []Command // ascending (T, Version), at most MaxCommands
	seq  uint64
}

// Point is one evaluation of a series, in the API's JSON.
type Point struct {
	T      int64   `json:"t"` // window end (evaluation time), Unix ms of event time
	Value  float64 `json:"v"`
	Lower  float64 `json:"lo"`  // Lower and Upper: the interval, both 0 when none
	Upper  float64 `json:"hi"`  //
	Thresh float64 `json:"thr"` // the budget or limit Value was judged against
	Status string  `json:"status"`
	Method string  `json:"method"`
	N      int64   `json:"n"`
}

// Command is one fuse command of a target's timeline, in the API's JSON.
type Command struct {
	T        int64   `json:"t"` // issued at, Unix ms of event time
	Expires  int64   `json:"expires"`
	Action   string  `json:"action"`
	State    string  `json:"state"`
	Level    int     `json:"level"`
	Version  uint64  `json:"version"`
	Fallback string  `json:"fallback,omitempty"`
	Throttle float64 `json:"throttle,omitempty"`
	Reason   string  `json:"reason,omitempty"` // the first reason's text
	// Incident is the command's incident id (its first correlation id), SLOs
	// the SLOs its slo:NAME correlation ids name: what the tenant matrix
	// counts (Tenants).
	Incident string   `json:"incident,omitempty"`
	SLOs     []string `json:"slos,omitempty"`
}

// NewStore returns an empty store; cfg's zero fields take the defaults.
func NewStore(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Store{cfg: cfg.withDefaults(), series: map[seriesID]*series{}, targets: map[schemas.Key]*target{}, incidents: map[string]*incidentEntry{}}, nil
}

// Config returns the store's bounds, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Write records out's verdicts, commands and incident records. It never
// fails.
func (s *Store) Write(_ context.Context, out schemas.Output) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out.Verdicts {
		s.addVerdict(&out.Verdicts[i])
	}
	for i := range out.Commands {
		s.addCommand(&out.Commands[i])
	}
	for i := range out.Incidents {
		s.addIncident(&out.Incidents[i])
	}
	return nil
}

// Flush does nothing: the store holds no buffer.
func (*Store) Flush(context.Context) error { return nil }

// Close does nothing: the page keeps serving what the store holds.
func (*Store) Close(context.Context) error { return nil }

func (s *Store) addVerdict(v *schemas.Verdict) {
	s.verdicts++
	s.seq++
	id := seriesID{v.Processor, v.SLO, v.Metric, v.Key}
	se := s.series[id]
	if se == nil {
		if len(s.series) >= s.cfg.MaxSeries {
			s.evictSeries()
		}
		se = &series{id: id}
		s.series[id] = se
	}
	se.seq = s.seq
	p := Point{T: v.WindowEndUnixNano / 1e6, Value: v.Value, Lower: v.Lower, Upper: v.Upper, Thresh: v.Threshold,
		Status: string(v.Status), Method: v.Method, N: v.N}
	// A replay re-emits an evaluation with the same window end: it
	// replaces the point; an older one is put in its place.
	i, found := slices.BinarySearchFunc(se.points, p.T, func(a Point, t int64) int { return cmpInt(a.T, t) })
	if found {
		se.points[i] = p
	} else {
		se.points = insertBounded(se.points, i, p, s.cfg.MaxPoints)
	}
	if se.latest == nil || v.WindowEndUnixNano >= se.latest.WindowEndUnixNano {
		// A copy that shares nothing with the producer's verdict: the
		// store's history must not change when the producer reuses or
		// edits what it wrote.
		c := *v
		c.Details = slices.Clone(v.Details)
		c.Evidence = cloneEvidence(v.Evidence)
		se.latest = &c
	}
}

// cloneEvidence is a deep copy of e (nil for nil).
func cloneEvidence(e *schemas.Evidence) *schemas.Evidence {
	if e == nil {
		return nil
	}
	c := *e
	for _, p := range []*schemas.Points{&c.Current, &c.Reference, &c.Exceedances} {
		p.X, p.P = slices.Clone(p.X), slices.Clone(p.P)
	}
	return &c
}

func (s *Store) evictSeries() {
	var old *series
	for _, se := range s.series {
		if old == nil || se.seq < old.seq {
			old = se
		}
	}
	delete(s.series, old.id)
	s.droppedSeries++
}

func (s *Store) addCommand(c *schemas.FuseCommand) {
	s.commands++
	s.seq++
	tg := s.targets[c.Target]
	if tg == nil {
		if len(s.targets) >= s.cfg.MaxTargets {
			var old *target
			for _, t := range s.targets {
				if old == nil || t.seq < old.seq {
					old = t
				}
			}
			delete(s.targets, old.key)
			s.droppedTarget++
		}
		tg = &target{key: c.Target}
		s.targets[c.Target] = tg
	}
	tg.seq = s.seq
	cmd := Command{T: c.IssuedAtUnixNano / 1e6, Expires: c.ExpiresAtUnixNano / 1e6, Action: string(c.Action), State: string(c.State),
		Level: c.Level, Version: c.Version, Fallback: c.Fallback, Throttle: c.ThrottleFraction}
	if len(c.Reasons) > 0 {
		cmd.Reason = c.Reasons[0].Text
	}
	if len(c.CorrelationIDs) > 0 {
		cmd.Incident = c.CorrelationIDs[0]
		for _, id := range c.CorrelationIDs[1:] {
			if slo, ok := strings.CutPrefix(id, "slo:"); ok {
				cmd.SLOs = append(cmd.SLOs, slo)
			}
		}
	}
	less := func(a Command) int {
		if a.T != cmd.T {
			return cmpInt(a.T, cmd.T)
		}
		return cmpInt(int64(a.Version), int64(cmd.Version))
	}
	i, found := slices.BinarySearchFunc(tg.cmds, cmd, func(a, _ Command) int { return less(a) })
	if found { // the same command again (a replay, a re-publish)
		tg.cmds[i] = cmd
	} else {
		tg.cmds = insertBounded(tg.cmds, i, cmd, s.cfg.MaxCommands)
	}
}

// insertBounded inserts x at index i of the sorted s and drops the oldest
// (first) element beyond max. Its capacity grows by doubling up to max and
// never beyond, so a full series holds exactly max elements of memory.
func insertBounded[T any](s []T, i int, x T, max int) []T {
	if len(s) == max {
		if i == 0 {
			return s // older than everything kept: it would be dropped at once
		}
		copy(s[:i-1], s[1:i])
		s[i-1] = x
		return s
	}
	if len(s) == cap(s) {
		grown := make([]T, len(s), min(max, 2*cap(s)+4))
		copy(grown, s)
		s = grown
	}
	return slices.Insert(s, i, x)
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

// keyLess orders keys by tenant, service, model, variant. It is the same
// order as engine's compareKeys (engine/guard.go); ui does not import the
// engine for it.
func keyLess(a, b schemas.Key) int {
	for _, p := range [][2]string{{a.Tenant, b.Tenant}, {a.Service, b.Service}, {a.Model, b.Model}, {a.Variant, b.Variant}} {
		if c := strings.Compare(p[0], p[1]); c != 0 {
			return c
		}
	}
	return 0
}
