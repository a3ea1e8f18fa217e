package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/schemas"
)

// maxTrackedTargets bounds the breaker targets the metrics remember (the
// breaker's own default MaxTargets): beyond it, closed targets are
// forgotten first.
const maxTrackedTargets = 100_000

// tracker counts what the stages do not count themselves, for /metrics
// and /readyz: verdicts by processor and status, commands by action, the
// breaker state of every target (from the commands), and the keyed
// stage's batch latency (engine.KeyedConfig.BatchLatency). It sees the
// output through a sink added after the real ones (so an output is counted
// once every configured sink accepted it). The partitions each consumer
// group handed this process, and those still restoring, are ingest's
// counts (ingest.Stats); the checkpoints the engine's (Keyed.Checkpoints).
type tracker struct {
	// latency is the keyed stage's BatchLatency.
	latency *observe.Histogram
	// log gets one INFO line per breaker state change (nil: none).
	log *slog.Logger
	// noSamples watches the no_samples verdicts (its own lock).
	noSamples noSamplesWatch

	mu       sync.Mutex
	verdicts map[verdictKey]int64
	commands map[schemas.Action]int64
	targets  map[schemas.Key]targetState
	seenOpen map[openKey]bool // combinations reported once, see openTargets

	// state is trackerNew, trackerRunning or trackerStopped.
	state atomic.Int32
}

const (
	trackerNew int32 = iota
	trackerRunning
	trackerStopped
)

type verdictKey struct {
	processor string
	status    schemas.Status
}

type targetState struct {
	version uint64
	state   schemas.BreakerState
	action  schemas.Action
	// slo is the SLO whose verdict caused the newest command that named
	// one (a half-open after the cool-down names none and keeps the
	// tripping SLO); unknownSLO when no verdict of the command was seen.
	slo string
	// incident is the command's incident id (incidentOf).
	incident string
}

// incidentOf is a command's incident id: its first correlation id (the
// breaker's per-target incident, or the incident stage's attributed
// incident for a level command); "" when it has none.
func incidentOf(c *schemas.FuseCommand) string {
	if len(c.CorrelationIDs) == 0 || strings.HasPrefix(c.CorrelationIDs[0], "slo:") {
		return ""
	}
	return c.CorrelationIDs[0]
}

// sloOfCommand is the SLO a command's first "slo:NAME" correlation id
// names, "" when none.
func sloOfCommand(c *schemas.FuseCommand) string {
	for _, id := range c.CorrelationIDs {
		if n, ok := strings.CutPrefix(id, "slo:"); ok {
			return n
		}
	}
	return ""
}

// unknownSLO is the slo label of a target whose command's verdicts were
// not in the same output (a restart restored the breaker mid-incident).
const unknownSLO = "unknown"

// commandActions are the actions counted from the start at 0, so a rate()
// over fusebox_fuse_commands_total has a series before the first command.
var commandActions = []schemas.Action{
	schemas.ActionTrip, schemas.ActionHalfOpen, schemas.ActionClose, schemas.ActionDegrade,
	schemas.ActionThrottle, schemas.ActionRollback, schemas.ActionScaleOut,
}

func newTracker() *tracker {
	h, err := observe.NewHistogram(nil)
	if err != nil {
		panic(err) // the default buckets are valid
	}
	t := &tracker{
		latency:  h,
		verdicts: map[verdictKey]int64{},
		commands: map[schemas.Action]int64{},
		targets:  map[schemas.Key]targetState{},
	}
	for _, a := range commandActions {
		t.commands[a] = 0
	}
	return t
}

// count records one Output.
func (t *tracker) count(out schemas.Output) {
	if len(out.Verdicts) == 0 && len(out.Commands) == 0 {
		return
	}
	t.noSamples.observe(out.Verdicts, time.Now())
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range out.Verdicts {
		v := &out.Verdicts[i]
		t.verdicts[verdictKey{v.Processor, v.Status}]++
	}
	var sloOf map[string]string // verdict id → SLO, built on the first command
	for i := range out.Commands {
		c := &out.Commands[i]
		t.commands[c.Action]++
		old, seen := t.targets[c.Target]
		if seen && c.Version <= old.version {
			continue // a replay after a restart: not newer
		}
		if sloOf == nil {
			sloOf = make(map[string]string, len(out.Verdicts))
			for j := range out.Verdicts {
				sloOf[out.Verdicts[j].ID] = out.Verdicts[j].SLO
			}
		}
		slo, reason := old.slo, ""
		for _, r := range c.Reasons {
			if s, ok := sloOf[r.VerdictID]; ok && s != "" {
				slo, reason = s, r.Text
				break
			}
		}
		if reason == "" && len(c.Reasons) > 0 {
			reason = c.Reasons[0].Text
		}
		if slo == "" || slo == unknownSLO {
			// A command of the incident stage cites an incident record,
			// not a verdict: its "slo:NAME" correlation id names the SLO.
			if n := sloOfCommand(c); n != "" {
				slo = n
			}
		}
		if slo == "" {
			slo = unknownSLO
		}
		incident := incidentOf(c)
		if t.log != nil && (!seen || old.state != c.State || old.action != c.Action) {
			from := schemas.StateClosed
			if seen {
				from = old.state
			}
			// reason carries the SLO's value and budget that caused it.
			t.log.Info("breaker state change", "target", c.Target.String(), "action", string(c.Action),
				"state", string(c.State), "from", string(from), "slo", slo, "incident", incident, "version", c.Version, "reason", reason)
		}
		if !seen && len(t.targets) >= maxTrackedTargets {
			for k, s := range t.targets {
				if s.state == schemas.StateClosed {
					delete(t.targets, k)
				}
			}
			if len(t.targets) >= maxTrackedTargets {
				continue
			}
		}
		t.targets[c.Target] = targetState{version: c.Version, state: c.State, action: c.Action, slo: slo, incident: incident}
	}
}

// openTargets counts the open and half-open targets per SLO, action,
// state and incident; a combination seen once is reported at 0 when no
// target is in it any more, so an alert's series ends with a 0 rather
// than vanishing — once (the next call, i.e. the next scrape), then it is
// forgotten, so that every incident's series does not stay forever. The
// caller holds t.mu.
func (t *tracker) openTargets() []observe.SLOTargetCount {
	if t.seenOpen == nil {
		t.seenOpen = map[openKey]bool{}
	}
	n := map[openKey]int64{}
	for _, s := range t.targets {
		if s.state == schemas.StateOpen || s.state == schemas.StateHalfOpen {
			k := openKey{s.slo, s.action, s.state, s.incident}
			n[k]++
			t.seenOpen[k] = true
		}
	}
	out := make([]observe.SLOTargetCount, 0, len(t.seenOpen))
	for k := range t.seenOpen {
		out = append(out, observe.SLOTargetCount{SLO: k.slo, Action: string(k.action), State: string(k.state), Incident: k.incident, Count: n[k]})
		if n[k] == 0 {
			delete(t.seenOpen, k)
		}
	}
	return out
}

type openKey struct {
	slo      string
	action   schemas.Action
	state    schemas.BreakerState
	incident string
}

// sink is the counting sink the keyed stage writes to last.
func (t *tracker) sink() countingSink { return countingSink{t} }

// countingSink hands every Output to the tracker. It never fails or
// blocks.
type countingSink struct{ t *tracker }

func (s countingSink) Write(_ context.Context, out schemas.Output) error {
	s.t.count(out)
	return nil
}
func (countingSink) Flush(context.Context) error { return nil }
func (countingSink) Close(context.Context) error { return nil }

// ready implements Pipeline.Ready: nil, or every reason, joined by "; ".
// source and keyed are the two consumers' stats (the partitions they own).
func (t *tracker) ready(routerGroup, keyedGroup string, source, keyed ingest.Stats) error {
	switch t.state.Load() {
	case trackerNew:
		return errors.New("the pipeline is not running yet")
	case trackerStopped:
		return errors.New("the pipeline has stopped")
	}
	var why []string
	if source.Partitions <= 0 {
		why = append(why, "consumer group "+routerGroup+" has assigned no source partition to this process yet")
	}
	if keyed.Partitions <= 0 {
		why = append(why, "consumer group "+keyedGroup+" has assigned no keyed partition to this process yet")
	} else if n := keyed.Starting; n > 0 {
		why = append(why, fmt.Sprintf("%d keyed partition(s) still restoring their checkpoint", n))
	}
	if len(why) == 0 {
		return nil
	}
	return errors.New(strings.Join(why, "; "))
}
