package demo

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/schemas"
)

// maxEvents is how many fuse commands the state keeps for the view;
// maxEffects how many effect verdicts.
const (
	maxEvents  = 12
	maxEffects = 6
)

// state is what the demo knows, fed by the pipeline's output (verdicts,
// through a sink) and by the fuse client (verified commands). Safe for
// concurrent use.
type state struct {
	start time.Time // event time of the scenario's start
	incs  []Incident
	// wall0 is when the demo started (wall time), for "tripped and
	// recovered after".
	wall0 time.Time

	mu       sync.Mutex
	latest   map[seriesKey]schemas.Verdict
	rows     map[rowKey]bool
	eventNow int64 // newest window end seen
	verdicts int64
	cmdsOut  int64 // commands the engine handed its sinks
	// commands applied by the fuse client: newest per target, and the
	// last maxEvents in order.
	fuse    map[schemas.Key]schemas.FuseCommand
	events  []fuseEvent
	applied int64
	// effects are the last maxEffects effect verdicts, in order.
	effects []schemas.Verdict
	// per incident: wall time of the first trip of its target and of the
	// close after it (zero: not yet).
	tripped, closed []time.Duration
	elsewhere       []schemas.FuseCommand // trips outside every incident
	allDone         time.Duration
	// onVerdict and onCommand, when set, are called with each verdict and
	// each applied command (headless printing), under mu.
	onVerdict func(*schemas.Verdict)
	onCommand func(*schemas.FuseCommand)
}

type seriesKey struct {
	processor, metric string
	key               schemas.Key
}

// rowKey is a row of the view: tenant, service, model.
type rowKey struct{ tenant, service, model string }

type fuseEvent struct {
	cmd  schemas.FuseCommand
	wall time.Duration
}

func newState(start time.Time, incs []Incident) *state {
	return &state{
		start: start, incs: incs, wall0: time.Now(),
		latest: map[seriesKey]schemas.Verdict{}, rows: map[rowKey]bool{},
		fuse:    map[schemas.Key]schemas.FuseCommand{},
		tripped: make([]time.Duration, len(incs)), closed: make([]time.Duration, len(incs)),
	}
}

// sink is the engine.Sink the pipeline writes to (an extra sink): it only
// reads the verdicts, it never fails or blocks.
type stateSink struct{ s *state }

func (k stateSink) Write(_ context.Context, out schemas.Output) error {
	k.s.observe(out)
	return nil
}
func (stateSink) Flush(context.Context) error { return nil }
func (stateSink) Close(context.Context) error { return nil }

func (s *state) observe(out schemas.Output) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmdsOut += int64(len(out.Commands))
	for i := range out.Verdicts {
		v := &out.Verdicts[i]
		s.verdicts++
		s.eventNow = max(s.eventNow, v.WindowEndUnixNano)
		if v.Processor == effect.Name {
			s.effects = append(s.effects, *v)
			if len(s.effects) > maxEffects {
				s.effects = slices.Delete(s.effects, 0, len(s.effects)-maxEffects)
			}
			if s.onVerdict != nil {
				s.onVerdict(v)
			}
			continue
		}
		s.latest[seriesKey{v.Processor, v.Metric, v.Key}] = *v
		if v.Key.Model != "" && v.Key.Model != schemas.Wildcard && v.Key.Service != "" {
			s.rows[rowKey{v.Key.Tenant, v.Key.Service, v.Key.Model}] = true
		}
		if s.onVerdict != nil {
			s.onVerdict(v)
		}
	}
}

// command is the fuse client's OnChange.
func (s *state) command(_, c schemas.FuseCommand) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wall := time.Since(s.wall0)
	s.applied++
	s.fuse[c.Target] = c
	s.events = append(s.events, fuseEvent{cmd: c, wall: wall})
	if len(s.events) > maxEvents {
		s.events = slices.Delete(s.events, 0, len(s.events)-maxEvents)
	}
	in := -1
	for i := range s.incs {
		if s.incs[i].Covers(c.Target) {
			in = i
		}
	}
	switch {
	case in < 0 && c.State == schemas.StateOpen:
		s.elsewhere = append(s.elsewhere, c)
	case in >= 0 && c.Target == s.incs[in].Target:
		if c.State == schemas.StateOpen && s.tripped[in] == 0 {
			s.tripped[in] = wall
		}
		if c.State == schemas.StateClosed && s.tripped[in] > 0 && s.closed[in] == 0 {
			s.closed[in] = wall
			done := true
			for _, t := range s.closed {
				done = done && t > 0
			}
			if done {
				s.allDone = wall
			}
		}
	}
	if s.onCommand != nil {
		s.onCommand(&c)
	}
}

// clock is the demo's clock: the newest evaluation time of the verdicts
// seen (the event time the pipeline has reached), or the start.
func (s *state) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.eventNow == 0 {
		return s.start
	}
	return time.Unix(0, s.eventNow)
}

// counts returns the verdicts seen, the commands the engine emitted and
// the commands the fuse client applied.
func (s *state) counts() (verdicts, emitted, applied int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verdicts, s.cmdsOut, s.applied
}

// Outcome is what the incidents did, as the fuse client saw it.
type Outcome struct {
	// Tripped and Closed are, per incident (in Incidents order), the wall
	// time after the start at which its target's first trip and the close
	// after it were applied; zero when not seen.
	Tripped, Closed []time.Duration
	// AllDone is when the last incident closed (zero: not all did).
	AllDone time.Duration
	// Elsewhere are trips of targets outside every incident.
	Elsewhere []schemas.FuseCommand
}

func (s *state) outcome() Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Outcome{Tripped: slices.Clone(s.tripped), Closed: slices.Clone(s.closed), AllDone: s.allDone,
		Elsewhere: slices.Clone(s.elsewhere)}
}

// sortedRows returns the rows in tenant, service, model order.
func (s *state) sortedRows() []rowKey {
	out := make([]rowKey, 0, len(s.rows))
	for r := range s.rows {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b rowKey) int {
		return strings.Compare(a.tenant+"/"+a.service+"/"+a.model, b.tenant+"/"+b.service+"/"+b.model)
	})
	return out
}

// covers reports whether command target t applies to row r.
func covers(t schemas.Key, r rowKey) bool {
	m := func(td, v string) bool { return td == schemas.Wildcard || td == v }
	return m(t.Tenant, r.tenant) && m(t.Service, r.service) && m(t.Model, r.model)
}
