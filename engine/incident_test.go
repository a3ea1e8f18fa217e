package engine_test

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/processors/incident"
	"github.com/fusebox-dev/fusebox/schemas"
)

// incidentSLOFile is one tail SLO and the per-key breaker tripping on it:
// the slow-model incident of issue 26 is a latency one.
const incidentSLOFile = `
version: incidents-1
keys:
  dimensions: [tenant, service, model, variant]
time:
  allowed_lateness: 10s
slos:
  - name: latency-p999
    tail:
      metric: duration_ms
      p: 0.999
      budget: 6000
      window: 5m
      every: 1m
breaker:
  rules:
    - {processor: tail, action: trip}
`

// incidentKeyedPartitions is the keyed partitions the traffic is routed to.
const incidentKeyedPartitions = 6

// incidentScenario is six tenants × two services × four models (two of
// openai's, so that a provider and a model differ) × two variants: 96
// keys, 200 calls/s, for 25 minutes, with the given incidents.
func incidentScenario(seed uint64, incs ...traffic.Incident) traffic.Scenario {
	sc := traffic.Demo()
	sc.Seed, sc.Rate, sc.Duration = seed, 200, incidentDuration
	sc.Tenants = []string{"acme", "globex", "initech", "umbrella", "hooli", "stark"}
	sc.Models = []string{"gpt-4o-mini", "gpt-4o", "claude-3-5-haiku", "llama-3-70b"}
	sc.Incidents = incs
	return sc
}

const incidentDuration = 25 * time.Minute

var incidentProviders = map[string]string{"gpt-4o-mini": "openai", "gpt-4o": "openai", "claude-3-5-haiku": "anthropic", "llama-3-70b": "meta"}

// incidentRun is one scenario through the router's splitters, a worker per
// keyed partition (with summaries) and the incident stage fed the
// partitions' summaries round-robin, one at a time.
type incidentRun struct {
	res       replay.Result
	incidents []schemas.Incident
	// perKey are the per-key breaker's commands (what it would have
	// written without the stage: carried in the summaries); commands what
	// the stage wrote instead.
	perKey, commands []schemas.FuseCommand
	// effects are the stage's effect verdicts of its level commands.
	effects []schemas.Verdict
	stage   *incident.Stage
}

// incidentStageConfig is the stage of the tests: it writes the latency
// SLO's commands. MaxWait is unbounded: the determinism checks feed one
// partition's summaries after another's, an arrival order in which every
// partition but the first lags by the whole run (a bounded wait would
// decide without them: partial records, by design order-dependent).
var incidentStageConfig = incident.Config{Partitions: incidentKeyedPartitions, Providers: incidentProviders,
	Commands: []incident.CommandRule{{SLO: "latency-p999"}}, MaxWait: 1 << 30}

func runIncidents(t *testing.T, sc traffic.Scenario) incidentRun {
	t.Helper()
	cfg, _, err := replay.ParseWorkerConfig("incidents.yaml", []byte(incidentSLOFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Summaries, cfg.AttributedSLOs = true, []string{"latency-p999"}
	src, err := replay.Generate(sc, replay.Start, incidentDuration, replay.GenConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Drive(cfg, replay.Route(src, replay.RouteConfig{KeyedPartitions: incidentKeyedPartitions}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output.Commands) != 0 {
		t.Fatalf("the workers wrote %d commands of an attributed SLO themselves", len(res.Output.Commands))
	}
	st, err := incident.New(incidentStageConfig)
	if err != nil {
		t.Fatal(err)
	}
	run := incidentRun{res: res, stage: st}
	out := feedRoundRobin(t, st, res.Partitions)
	run.incidents, run.commands, run.effects = out.Incidents, out.Commands, out.Verdicts
	for _, s := range res.Output.Summaries {
		run.perKey = append(run.perKey, s.Commands...)
	}
	return run
}

// feedRoundRobin hands the stage one summary of each partition in turn.
func feedRoundRobin(t *testing.T, st *incident.Stage, parts []schemas.Output) schemas.Output {
	t.Helper()
	var out schemas.Output
	pos := make([]int, len(parts))
	for more := true; more; {
		more = false
		for p := range parts {
			if pos[p] < len(parts[p].Summaries) {
				o, err := st.Add(parts[p].Summaries[pos[p]])
				if err != nil {
					t.Fatal(err)
				}
				out.Incidents = append(out.Incidents, o.Incidents...)
				out.Commands = append(out.Commands, o.Commands...)
				out.Verdicts = append(out.Verdicts, o.Verdicts...)
				pos[p]++
				more = true
			}
		}
	}
	return out
}

// opened returns the opening records of the incidents not merged into
// another (see incident.Stage.merge).
func opened(incs []schemas.Incident) []schemas.Incident {
	merged := map[string]bool{}
	for _, i := range incs {
		if i.MergedInto != "" {
			merged[i.IncidentID] = true
		}
	}
	var out []schemas.Incident
	for _, i := range incs {
		if i.Status == schemas.IncidentOpened && !merged[i.IncidentID] {
			out = append(out, i)
		}
	}
	return out
}

func describe(incs []schemas.Incident) string {
	var b strings.Builder
	for _, i := range incs {
		fmt.Fprintf(&b, "\n  %s %s=%s at +%v breaching %d healthy %d (others %d/%d) p=%.3g", i.Status, i.Dimension, i.Value,
			time.Duration(i.AtUnixNano-replay.Start.UnixNano()), i.Breaching, i.Healthy, i.OtherBreaching, i.OtherHealthy, i.PValue)
	}
	return b.String()
}

// tripsOf counts the per-key breaker's open commands, and the first
// one's evaluation.
func tripsOf(cmds []schemas.FuseCommand) (n int, first int64) {
	first = -1
	for _, c := range cmds {
		if c.State == schemas.StateOpen {
			n++
			if first < 0 || c.IssuedAtUnixNano < first {
				first = c.IssuedAtUnixNano
			}
		}
	}
	return n, first
}

func TestIncidentAttribution(t *testing.T) {
	m := time.Minute
	tail := func(name string, start, end time.Duration, tg traffic.Target) traffic.Incident {
		return traffic.Incident{Name: name, Kind: traffic.TailBlowup, Start: start, End: end, Target: tg, Magnitude: 0.03}
	}
	cases := []struct {
		name string
		incs []traffic.Incident
		// want lists the attributions that must open, as dimension=value.
		want []string
		// wantTargets is the targets the stage writes commands for, and
		// wantCommands the commands (open, TTL/2 refresh, close per target).
		wantTargets, wantCommands int
	}{
		{"one model across tenants", []traffic.Incident{tail("slow model", 5*m, 15*m, traffic.Target{Model: "claude-3-5-haiku"})}, []string{"model=claude-3-5-haiku"}, 1, 3},
		{"one tenant across models", []traffic.Incident{tail("slow tenant", 5*m, 15*m, traffic.Target{Tenant: "globex"})}, []string{"tenant=globex"},
			// Its baselines (8 of 8) and its chat keys breach first, the
			// canaries 3 of 8: globex/*/*/baseline and globex/chat/*/*
			// open at +8m and merge into globex/*/*/* at +9m.
			3, 11},
		{"one provider", []traffic.Incident{tail("slow provider", 5*m, 15*m, traffic.Target{Model: "gpt-4o"}), tail("slow provider 2", 5*m, 15*m, traffic.Target{Model: "gpt-4o-mini"})}, []string{"provider=openai"}, 2, 6},
		{"one model's canary across tenants", []traffic.Incident{tail("bad canary", 5*m, 15*m, traffic.Target{Model: "gpt-4o", Variant: "canary"})}, []string{"model,variant=gpt-4o,canary"}, 1, 3},
		{"one key alone", []traffic.Incident{tail("one key", 5*m, 15*m, traffic.Target{Tenant: "acme", Service: "chat", Model: "llama-3-70b", Variant: "baseline"})}, []string{"key=acme/chat/llama-3-70b/baseline"}, 1, 4},
		{"two overlapping of different levels", []traffic.Incident{tail("slow model", 5*m, 15*m, traffic.Target{Model: "llama-3-70b"}), tail("slow tenant", 8*m, 18*m, traffic.Target{Tenant: "hooli"})}, []string{"model=llama-3-70b", "tenant=hooli"},
			// The tenant's baselines breach first (hooli/*/*/baseline
			// opens at +11m and merges into the tenant's at +12m, its
			// target kept under the tenant's commands): 3 targets.
			3, 8},
		{"clean", nil, nil, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := runIncidents(t, incidentScenario(11, c.incs...))
			ops := opened(run.incidents)
			var got []string
			for _, o := range ops {
				got = append(got, o.Dimension+"="+o.Value)
			}
			slices.Sort(got)
			trips, firstTrip := tripsOf(run.perKey)
			firstCmd := int64(-1)
			if len(run.commands) > 0 {
				firstCmd = run.commands[0].IssuedAtUnixNano
			}
			evals := func(at int64) int64 {
				if at < 0 {
					return -1
				}
				return (at - replay.Start.UnixNano() - int64(5*m)) / int64(m)
			}
			t.Logf("%s: per-key breaker: %d commands for %d targets (%d trips, first %d evaluations after the start); with the stage: %d commands for %d targets (first %d evaluations after the start), %d per-key suppressed; incidents:%s",
				c.name, len(run.perKey), targets(run.perKey), trips, evals(firstTrip), len(run.commands), targets(run.commands), evals(firstCmd),
				run.stage.Stats().Commands.Suppressed, describe(opened(run.incidents)))
			if testing.Verbose() {
				t.Logf("all records:%s", describe(run.incidents))
			}
			if targets(run.commands) != c.wantTargets || len(run.commands) != c.wantCommands {
				t.Errorf("the stage wrote %d commands for %d targets, want %d for %d:%s", len(run.commands), targets(run.commands), c.wantCommands, c.wantTargets, describeCmds(run.commands))
			}
			// One effect verdict per level target (a target with a
			// wildcard: the stage's own commands), judged on the level's
			// keys; none for the per-key commands it passes.
			levelTargets := map[schemas.Key]bool{}
			for _, c := range run.commands {
				if strings.Contains(c.Target.String(), "*") {
					levelTargets[c.Target] = true
				}
			}
			for _, v := range run.effects {
				if v.Processor != "effect" || !levelTargets[v.Key] || v.Metric != "breaching_share" {
					t.Errorf("effect verdict %s %s %s for a target without a level command", v.Processor, v.Metric, v.Key.String())
				}
				if err := v.Validate(); err != nil {
					t.Errorf("effect verdict %s: %v", v.Key.String(), err)
				}
				t.Logf("effect of %s: %s after %v evaluations, breaching share %.2f -> %.2f", v.Key.String(), v.Method, detailOf(v, "evaluations"), detailOf(v, "before"), v.Value)
			}
			if len(run.effects) != len(levelTargets) {
				t.Errorf("%d effect verdicts for %d level targets", len(run.effects), len(levelTargets))
			}
			if len(run.perKey) > 0 && (firstCmd < 0 || firstCmd > firstTrip) {
				t.Errorf("the stage's first command at +%v, the per-key breaker's first trip at +%v", time.Duration(firstCmd-replay.Start.UnixNano()), time.Duration(firstTrip-replay.Start.UnixNano()))
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("opened %v, want %v:%s", got, c.want, describe(run.incidents))
			}
			for _, o := range ops {
				// No slower than the per-key breaker: the incident (or
				// one merged into it) opens at or before the first trip
				// of a key it explains that no incident opened before it
				// explains.
				detected := o.AtUnixNano
				for _, r := range run.incidents {
					if r.MergedInto == o.IncidentID {
						detected = min(detected, r.FirstUnixNano)
					}
				}
				var earlier []schemas.Incident
				for _, e := range ops {
					if e.AtUnixNano < o.AtUnixNano {
						earlier = append(earlier, e)
					}
				}
				if ft := firstTripOf(run.perKey, o, earlier); ft >= 0 && detected > ft {
					t.Errorf("%s=%s detected at +%v, after its keys' first trip at +%v", o.Dimension, o.Value,
						time.Duration(detected-replay.Start.UnixNano()), time.Duration(ft-replay.Start.UnixNano()))
				}
				if o.Dimension != schemas.DimKey && !(o.PValue < 0.01) {
					t.Errorf("%s=%s opened with p=%v", o.Dimension, o.Value, o.PValue)
				}
			}
			checkIncidentDeterminism(t, run)
		})
	}
}

// firstTripOf is the issue time of the first per-key open command whose
// target carries o's value and none of earlier's (-1: none).
func firstTripOf(cmds []schemas.FuseCommand, o schemas.Incident, earlier []schemas.Incident) int64 {
	first := int64(-1)
next:
	for _, c := range cmds {
		if c.State != schemas.StateOpen || !carries(c.Target, o) {
			continue
		}
		for _, e := range earlier {
			if carries(c.Target, e) {
				continue next
			}
		}
		if first < 0 || c.IssuedAtUnixNano < first {
			first = c.IssuedAtUnixNano
		}
	}
	return first
}

func carries(k schemas.Key, o schemas.Incident) bool {
	vals := strings.Split(o.Value, ",")
	for i, d := range strings.Split(o.Dimension, ",") {
		var v string
		switch d {
		case schemas.DimKey:
			return k.String() == o.Value
		case schemas.DimTenant:
			v = k.Tenant
		case schemas.DimService:
			v = k.Service
		case schemas.DimModel:
			v = k.Model
		case schemas.DimVariant:
			v = k.Variant
		case schemas.DimProvider:
			v = incidentProviders[k.Model]
		}
		if v != vals[i] {
			return false
		}
	}
	return true
}

// checkIncidentDeterminism feeds the same summaries partition after
// partition (another interleaving, as another process layout would), and
// again with a restart of the stage halfway (snapshot, restore, every
// summary re-fed from the start as replayed workers would): the incident
// records must be the same, byte for byte of their fields.
func checkIncidentDeterminism(t *testing.T, run incidentRun) {
	t.Helper()
	cfg := incidentStageConfig
	st, _ := incident.New(cfg)
	var seq, seqCmds, seqEff = []schemas.Incident(nil), []schemas.FuseCommand(nil), []schemas.Verdict(nil)
	for p := range run.res.Partitions {
		for _, s := range run.res.Partitions[p].Summaries {
			o, err := st.Add(s)
			if err != nil {
				t.Fatal(err)
			}
			seq = append(seq, o.Incidents...)
			seqCmds = append(seqCmds, o.Commands...)
			seqEff = append(seqEff, o.Verdicts...)
		}
	}
	if !reflect.DeepEqual(seq, run.incidents) || !reflect.DeepEqual(seqCmds, run.commands) || !reflect.DeepEqual(seqEff, run.effects) {
		t.Fatalf("partition after partition: %d records and %d commands, round-robin %d and %d; they differ", len(seq), len(seqCmds), len(run.incidents), len(run.commands))
	}
	// The restart: the first half of each partition's summaries, then a
	// snapshot; a new stage restored from it gets everything again.
	st, _ = incident.New(cfg)
	var before schemas.Output
	for p := range run.res.Partitions {
		ss := run.res.Partitions[p].Summaries
		for _, s := range ss[:len(ss)/2] {
			o, _ := st.Add(s)
			before.Incidents = append(before.Incidents, o.Incidents...)
			before.Commands = append(before.Commands, o.Commands...)
			before.Verdicts = append(before.Verdicts, o.Verdicts...)
		}
	}
	snap, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := incident.New(cfg)
	if err := again.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	if snap2, _ := again.MarshalBinary(); string(snap2) != string(snap) {
		t.Fatal("a restored stage's snapshot differs from the one it was restored from")
	}
	after := feedRoundRobin(t, again, run.res.Partitions)
	all := append(before.Incidents, after.Incidents...)
	allCmds := append(before.Commands, after.Commands...)
	allEff := append(before.Verdicts, after.Verdicts...)
	if !reflect.DeepEqual(all, run.incidents) || !reflect.DeepEqual(allCmds, run.commands) || !reflect.DeepEqual(allEff, run.effects) {
		t.Fatalf("with a restart: %d records and %d commands, without %d and %d; they differ", len(all), len(allCmds), len(run.incidents), len(run.commands))
	}
	if again.Stats().Duplicates == 0 && len(run.incidents) > 0 {
		t.Fatal("the re-fed summaries were not counted as duplicates")
	}
}

// targets counts the distinct targets of cmds.
func targets(cmds []schemas.FuseCommand) int {
	seen := map[schemas.Key]bool{}
	for _, c := range cmds {
		seen[c.Target] = true
	}
	return len(seen)
}

func describeCmds(cmds []schemas.FuseCommand) string {
	var b strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&b, "\n  %s %s %s at +%v", c.Target.String(), c.Action, c.State, time.Duration(c.IssuedAtUnixNano-replay.Start.UnixNano()))
	}
	return b.String()
}

// BenchmarkIncidentsCleanTraffic is the false-incident study: clean
// traffic (incidentScenario without incidents, 96 keys, 200 calls/s) for
// FUSEBOX_INCIDENT_STUDY_HOURS of event time (default 1) per seed (seeds
// 1..FUSEBOX_INCIDENT_STUDY_SEEDS, default 1), streamed through one worker
// with summaries and the incident stage. It reports the incidents opened
// (aggregate and key) per 1,000 key-days; docs/architecture.md#incidents
// has the figures:
//
//	FUSEBOX_INCIDENT_STUDY_HOURS=8 go test ./engine -run '^$' -bench IncidentsCleanTraffic -benchtime 1x
func BenchmarkIncidentsCleanTraffic(b *testing.B) {
	hours, seeds := 1, 1
	if v, err := strconv.Atoi(os.Getenv("FUSEBOX_INCIDENT_STUDY_HOURS")); err == nil && v > 0 {
		hours = v
	}
	if v, err := strconv.Atoi(os.Getenv("FUSEBOX_INCIDENT_STUDY_SEEDS")); err == nil && v > 0 {
		seeds = v
	}
	cfg, _, err := replay.ParseWorkerConfig("incidents.yaml", []byte(incidentSLOFile))
	if err != nil {
		b.Fatal(err)
	}
	cfg.Summaries, cfg.AttributedSLOs = true, []string{"latency-p999"}
	for range b.N {
		var opened, aggregate, commands, perKey int
		var keyDays float64
		for seed := 1; seed <= seeds; seed++ {
			sc := incidentScenario(uint64(1000 + seed))
			sc.Duration = 0
			scfg := incidentStageConfig
			scfg.Partitions = 1
			st, err := incident.New(scfg)
			if err != nil {
				b.Fatal(err)
			}
			keys := map[schemas.Key]bool{}
			_, err = replay.Stream(cfg, sc, replay.Start, time.Duration(hours)*time.Hour, time.Second, func(o schemas.Output) {
				for _, v := range o.Verdicts {
					keys[v.Key] = true
				}
				for _, s := range o.Summaries {
					perKey += len(s.Commands)
					out, err := st.Add(s)
					if err != nil {
						b.Fatal(err)
					}
					commands += len(out.Commands)
					for _, i := range out.Incidents {
						if i.Status == schemas.IncidentOpened {
							opened++
							if i.Dimension != schemas.DimKey {
								aggregate++
							}
							b.Logf("seed %d: false incident %s=%s at +%v, %d of %d breaching, p=%.3g", seed, i.Dimension, i.Value,
								time.Duration(i.AtUnixNano-replay.Start.UnixNano()), i.Breaching, i.Breaching+i.Healthy, i.PValue)
						}
					}
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			keyDays += float64(len(keys)) * float64(hours) / 24
		}
		b.ReportMetric(keyDays, "key-days")
		b.ReportMetric(float64(opened), "incidents")
		b.ReportMetric(float64(aggregate), "aggregate-incidents")
		b.ReportMetric(float64(opened)/keyDays*1000, "incidents/1000key-days")
		b.ReportMetric(float64(perKey), "per-key-commands")
		b.ReportMetric(float64(commands), "stage-commands")
	}
}

func detailOf(v schemas.Verdict, name string) float64 {
	x, _ := v.Detail(name)
	return x
}

// The incident stage writes effect verdicts in processors/effect's layout
// (fuse_effects reads them by these names).
func TestIncidentEffectDetailsAreTheEffectProcessors(t *testing.T) {
	if !slices.Equal(incident.EffectDetailNames, effect.DetailNames) {
		t.Fatalf("incident.EffectDetailNames %v, effect.DetailNames %v", incident.EffectDetailNames, effect.DetailNames)
	}
}
