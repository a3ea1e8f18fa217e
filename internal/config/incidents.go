package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/incident"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Incidents is the `incidents:` section: the incident stage
// (processors/incident; docs/architecture.md#incidents). Off by default.
type Incidents struct {
	// Enabled makes every keyed partition's worker write an evaluation
	// summary per SLO and boundary to topics.summaries, and runs the
	// incident stage (consumer group <kafka.group>.incidents) on it.
	Enabled bool `yaml:"enabled"`
	// SLOs lists the SLOs attributed; empty: all of them.
	SLOs []string `yaml:"slos"`
	// Alpha is the family-wise error rate of one evaluation's tests
	// (Holm over the values tested). Default 0.01.
	Alpha float64 `yaml:"alpha"`
	// MinKeys is how many breaching keys a value needs to be attributed.
	// Default 2.
	MinKeys int `yaml:"min_keys"`
	// MinPurity is the share of a value's keys that must breach. Default 0.5.
	MinPurity float64 `yaml:"min_purity"`
	// OpenAfter is how many consecutive evaluations must find an
	// attribution before it opens (sooner when the per-key breaker trips
	// one of its keys). Default 2.
	OpenAfter int `yaml:"open_after"`
	// CloseAfter is how many consecutive evaluations without it close an
	// incident. Default 3.
	CloseAfter int `yaml:"close_after"`
	// MaxKeys caps the keys listed in an incident record. Default 50.
	MaxKeys int `yaml:"max_keys"`
	// MaxWait is how many evaluations the stage waits for a lagging keyed
	// partition before it decides without it (records marked partial, a
	// WARN naming the partition). Default 30.
	MaxWait int `yaml:"max_wait"`
	// Providers maps a model to its provider, for the provider dimension.
	Providers map[string]string `yaml:"providers"`
	// Commands makes the stage, not the per-key breaker, the writer of
	// these SLOs' fuse commands: one per incident's level, the per-key
	// ones it covers suppressed (see incident.CommandRule). Inert unless
	// Enabled.
	Commands []IncidentCommand `yaml:"commands"`
}

// IncidentCommand is one entry of incidents.commands.
type IncidentCommand struct {
	SLO string `yaml:"slo"`
	// Action is trip (default), degrade (with fallback), throttle or
	// rollback.
	Action   string `yaml:"action"`
	Fallback string `yaml:"fallback"`
	// TTL is the command's lifetime. Default: breaker.command_ttl.
	TTL time.Duration `yaml:"ttl"`
}

// incidentLevels is each action's level, as the breaker's rules have it.
var incidentLevels = map[string]int{"trip": 2, "degrade": 1, "throttle": 1, "rollback": 1}

func (f *File) validateIncidents() []fieldErr {
	var errs []fieldErr
	fail := func(bad bool, field, reason string) {
		if bad {
			errs = append(errs, fieldErr{field, reason})
		}
	}
	in := f.Incidents
	names := make([]string, len(f.SLOs))
	for i := range f.SLOs {
		names[i] = f.SLOs[i].Name
	}
	for i, s := range in.SLOs {
		fail(!slices.Contains(names, s), "incidents.slos["+strconv.Itoa(i)+"]", "no SLO named "+strconv.Quote(s))
	}
	if in.Enabled {
		errs = append(errs, f.incidentCadences()...)
	}
	fail(in.Alpha != 0 && !(in.Alpha > 0 && in.Alpha < 1), "incidents.alpha", fmt.Sprintf("must be in (0, 1), got %v", in.Alpha))
	fail(in.MinKeys != 0 && in.MinKeys < 2, "incidents.min_keys", fmt.Sprintf("must be at least 2 (one key is the per-key breaker's), got %d", in.MinKeys))
	fail(in.MinPurity != 0 && !(in.MinPurity > 0 && in.MinPurity <= 1), "incidents.min_purity", fmt.Sprintf("must be in (0, 1], got %v", in.MinPurity))
	for _, n := range []struct {
		field string
		v     int
	}{{"open_after", in.OpenAfter}, {"close_after", in.CloseAfter}, {"max_keys", in.MaxKeys}, {"max_wait", in.MaxWait}} {
		fail(n.v < 0, "incidents."+n.field, fmt.Sprintf("must be positive, got %d", n.v))
	}
	if len(errs) == 0 {
		if _, err := incident.New(f.incidentStage(1)); err != nil {
			fail(true, "incidents", err.Error()) // a rule the checks above missed
		}
	}
	for i, c := range in.Commands {
		at := "incidents.commands[" + strconv.Itoa(i) + "]"
		fail(!slices.Contains(names, c.SLO), at+".slo", "no SLO named "+strconv.Quote(c.SLO))
		_, ok := incidentLevels[c.Action]
		fail(c.Action != "" && !ok, at+".action", "must be trip, degrade, throttle or rollback, got "+strconv.Quote(c.Action))
		fail(c.Action == "degrade" && c.Fallback == "", at+".fallback", "degrade needs a fallback model")
		fail(c.TTL < 0, at+".ttl", "must not be negative")
		// The stage drops the summaries of SLOs it does not attribute, and
		// with them the breaker's commands they carry.
		fail(len(in.SLOs) > 0 && slices.Contains(names, c.SLO) && !slices.Contains(in.SLOs, c.SLO), at+".slo",
			strconv.Quote(c.SLO)+" is not in incidents.slos: the stage would not see its commands")
	}
	return errs
}

// IncidentStage is the incident stage's configuration for a deployment
// of partitions keyed partitions.
func IncidentStage(f *File, partitions int) incident.Config { return f.incidentStage(partitions) }

func (f *File) incidentStage(partitions int) incident.Config {
	in := f.Incidents
	c := incident.Config{Partitions: partitions, SLOs: in.SLOs, Alpha: in.Alpha, MinKeys: in.MinKeys, MinPurity: in.MinPurity,
		OpenAfter: in.OpenAfter, CloseAfter: in.CloseAfter, MaxKeys: in.MaxKeys, MaxWait: in.MaxWait, Providers: in.Providers, ConfigVersion: f.Version}
	for _, r := range in.Commands {
		cr := incident.CommandRule{SLO: r.SLO, Fallback: r.Fallback, TTL: r.TTL}
		if r.Action != "" {
			cr.Action, cr.Level = schemas.Action(r.Action), incidentLevels[r.Action]
		}
		if cr.TTL == 0 {
			cr.TTL = f.Breaker.CommandTTL
		}
		c.Commands = append(c.Commands, cr)
	}
	return c
}

// AttributedSLOs names the SLOs whose commands the incident stage writes:
// none unless incidents.enabled (without the stage, incidents.commands is
// inert and the per-key breaker writes every command).
func (f *File) AttributedSLOs() []string {
	if !f.Incidents.Enabled {
		return nil
	}
	var out []string
	for _, c := range f.Incidents.Commands {
		out = append(out, c.SLO)
	}
	return out
}

// incidentCadences refuses an attributed SLO whose metrics are not all
// evaluated at every boundary (processors.MetricIntervals): the stage
// reads one boundary's verdicts as the SLO's state, so a metric not due
// there (drift's ks between its minutes, beside cusum and slice every
// 15 s) would look healthy, and its incidents would close and reopen
// every minute. Loud rather than quietly wrong: the error says how to
// give the SLO one cadence.
func (f *File) incidentCadences() []fieldErr {
	var errs []fieldErr
	for i := range f.SLOs {
		s := &f.SLOs[i]
		if len(f.Incidents.SLOs) > 0 && !slices.Contains(f.Incidents.SLOs, s.Name) {
			continue
		}
		sec, ok := s.Processor()
		if !ok {
			continue
		}
		mi, ok := sec.Config.(processors.MetricIntervals)
		if !ok {
			continue
		}
		every := sec.Config.Interval()
		var slower []string
		for m, d := range mi.MetricIntervals() {
			if d != every {
				slower = append(slower, fmt.Sprintf("%s every %v", m, d))
			}
		}
		if len(slower) == 0 {
			continue
		}
		slices.Sort(slower)
		field := "incidents.slos"
		if j := slices.Index(f.Incidents.SLOs, s.Name); j >= 0 {
			field += "[" + strconv.Itoa(j) + "]"
		}
		errs = append(errs, fieldErr{field, fmt.Sprintf("SLO %q evaluates every %v but %s: the incident stage needs every metric at every boundary; "+
			"give it one cadence (drift: detectors: [ks], or step equal to every) or leave it out of incidents.slos", s.Name, every, strings.Join(slower, ", "))})
	}
	return errs
}
