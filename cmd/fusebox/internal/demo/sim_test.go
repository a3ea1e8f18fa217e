package demo

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/router"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// simulate drives the keyed stage's workers with sc's traffic exactly as
// the router would (one source partition for spans, one for corrections),
// without Kafka, and returns their output in order.
func simulate(t testing.TB, f *config.File, sc traffic.Scenario, start time.Time) ([]schemas.Verdict, []schemas.FuseCommand) {
	t.Helper()
	wc, err := config.WorkerConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	n := f.Topics.KeyedPartitions
	workers := make([]*engine.Worker, n)
	offsets := make([]int64, n)
	for p := range workers {
		if workers[p], err = engine.NewWorker(wc, int32(p)); err != nil {
			t.Fatal(err)
		}
	}
	const topics = "fusebox.corrections:1,otlp_spans:1"
	cfg := router.SplitterConfig{ByTenant: wc.KeyDims.Tenant, HeartbeatEvery: time.Second}
	spansSplit := router.NewSplitter("otlp_spans", 0, n, cfg)
	corrSplit := router.NewSplitter("fusebox.corrections", 0, n, cfg)
	var vs []schemas.Verdict
	var cs []schemas.FuseCommand
	apply := func(outs []router.Out) {
		for _, o := range outs {
			rec := &engine.KeyedRecord{Offset: offsets[o.Partition], Source: o.Source, SourceMaxEventTime: o.SourceMax,
				SourceTopics: topics, Idle: o.Idle, Spans: o.Spans, Corrections: o.Corrections}
			offsets[o.Partition]++
			w := workers[o.Partition]
			w.Apply(rec)
			out := w.TakeOutput()
			vs = append(vs, out.Verdicts...)
			cs = append(cs, out.Commands...)
		}
	}
	g, err := traffic.New(sc, start)
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	for !g.Done() {
		b := g.Next(time.Second)
		apply(spansSplit.Split(off, b.Spans, nil))
		apply(corrSplit.Split(off, nil, b.Corrections))
		off++
	}
	apply(spansSplit.MarkIdle())
	apply(corrSplit.MarkIdle())
	return vs, cs
}

// checkIncidents reports what the command stream misses: per incident a
// trip (state open) of its target and a later close; no trip of a target
// outside every incident. It returns, per incident, the event-time offsets
// of the first trip and of the close after it.
func checkIncidents(t *testing.T, cmds []schemas.FuseCommand, start time.Time) (tripAt, closeAt []time.Duration) {
	t.Helper()
	incs := Incidents()
	tripAt = make([]time.Duration, len(incs))
	closeAt = make([]time.Duration, len(incs))
	for i := range tripAt {
		tripAt[i], closeAt[i] = -1, -1
	}
	for _, c := range cmds {
		at := time.Duration(c.IssuedAtUnixNano - start.UnixNano())
		in := -1
		for i := range incs {
			if incs[i].Covers(c.Target) {
				in = i
			}
		}
		if in < 0 {
			if c.State == schemas.StateOpen {
				t.Errorf("trip outside every incident at +%v: %s %s %s (%v)", at, c.Target, c.Action, c.State, reasons(c))
			}
			continue
		}
		if c.Target != incs[in].Target {
			if c.State == schemas.StateOpen {
				t.Logf("incident %q also trips %s (%s) at +%v", incs[in].Name, c.Target, c.Action, at)
			}
			continue
		}
		switch {
		case c.State == schemas.StateOpen && tripAt[in] < 0:
			tripAt[in] = at
			if at < incs[in].Start {
				t.Errorf("incident %q (from +%v): %s tripped at +%v, before it started", incs[in].Name, incs[in].Start, c.Target, at)
			}
			if c.Action != incs[in].Action {
				t.Errorf("incident %q: trip with action %s, want %s (%v)", incs[in].Name, c.Action, incs[in].Action, reasons(c))
			}
		case c.State == schemas.StateClosed && tripAt[in] >= 0:
			closeAt[in] = at
		}
	}
	for i, inc := range incs {
		switch {
		case tripAt[i] < 0:
			t.Errorf("incident %q (%v to %v): no trip of %s", inc.Name, inc.Start, inc.End, inc.Target)
		case closeAt[i] < 0:
			t.Errorf("incident %q (%v to %v): tripped %s at +%v but never closed", inc.Name, inc.Start, inc.End, inc.Target, tripAt[i])
		default:
			t.Logf("incident %-18q %v-%v: trip +%v, close +%v", inc.Name, inc.Start, inc.End, tripAt[i], closeAt[i])
		}
	}
	return tripAt, closeAt
}

func reasons(c schemas.FuseCommand) []string {
	var out []string
	for _, r := range c.Reasons {
		out = append(out, r.Text)
	}
	return out
}

// TestScenarioTripsEveryIncident runs the built-in scenario and SLO file
// through the keyed stage's workers (no Kafka: the router's splitter feeds
// them) and checks the command stream: every incident trips its target
// with its action and closes later, nothing else trips.
func TestScenarioTripsEveryIncident(t *testing.T) {
	f, err := Config()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	vs, cmds := simulate(t, f, Scenario(), start)
	breaches := map[string]int{}
	for _, v := range vs {
		if v.Status == schemas.StatusBreach {
			breaches[v.Processor+" "+v.Key.String()]++
		}
	}
	t.Logf("%d verdicts, %d commands; breaches: %v", len(vs), len(cmds), breaches)
	for _, c := range cmds {
		t.Logf("+%v %s %s %s v%d %v", time.Duration(c.IssuedAtUnixNano-start.UnixNano()), c.Target, c.Action, c.State, c.Version&(1<<20-1), firstReason(c))
	}
	_, closeAt := checkIncidents(t, cmds, start)
	checkClosesCiteTripping(t, vs, cmds)
	lastCmd := map[schemas.Key]schemas.FuseCommand{}
	for _, c := range cmds {
		if prev, ok := lastCmd[c.Target]; ok && schemas.CompareFuseOrder(&c, &prev) <= 0 {
			t.Errorf("%s: command v%d issued %v is not after v%d issued %v: a gateway rejects it", c.Target, c.Version, c.IssuedAtUnixNano, prev.Version, prev.IssuedAtUnixNano)
		}
		lastCmd[c.Target] = c
	}
	last := time.Duration(math.MinInt64)
	for _, c := range closeAt {
		last = max(last, c)
	}
	t.Logf("last close at +%v of %v", last, Scenario().Duration)
	// The demo promises every incident tripped and recovered by the end of
	// the scenario (2.5 minutes of wall time at the default speedup).
	if last > Scenario().Duration {
		t.Errorf("the last incident closed at +%v, after the scenario's end +%v", last, Scenario().Duration)
	}
}

// checkClosesCiteTripping: every close cites only ok verdicts of the SLOs
// that tripped its target in that incident (read from the open commands'
// reasons), each such SLO at least once, and says so in its text.
func checkClosesCiteTripping(t *testing.T, vs []schemas.Verdict, cmds []schemas.FuseCommand) {
	t.Helper()
	byID := map[string]*schemas.Verdict{}
	for i := range vs {
		byID[vs[i].ID] = &vs[i]
	}
	tripping := map[schemas.Key]map[string]bool{}
	closes := 0
	for _, c := range cmds {
		switch c.State {
		case schemas.StateOpen:
			if tripping[c.Target] == nil {
				tripping[c.Target] = map[string]bool{}
			}
			if v := byID[c.Reasons[len(c.Reasons)-1].VerdictID]; v != nil {
				tripping[c.Target][v.SLO] = true
			}
		case schemas.StateClosed:
			closes++
			cited := map[string]bool{}
			for _, r := range c.Reasons {
				v := byID[r.VerdictID]
				if v == nil {
					t.Errorf("close of %s cites unknown verdict %s", c.Target, r.VerdictID)
					continue
				}
				if !tripping[c.Target][v.SLO] || v.Status != schemas.StatusOK {
					t.Errorf("close of %s cites %s %s/%s, not an ok of an SLO that tripped it (%v)", c.Target, v.Status, v.Processor, v.SLO, tripping[c.Target])
				}
				if !strings.Contains(r.Text, "tripping SLO "+v.SLO) || !strings.Contains(r.Text, "budget=") {
					t.Errorf("close reason %q does not name the tripping SLO %s and its budget", r.Text, v.SLO)
				}
				cited[v.SLO] = true
			}
			for slo := range tripping[c.Target] {
				if !cited[slo] {
					t.Errorf("close of %s does not cite tripping SLO %s", c.Target, slo)
				}
			}
			delete(tripping, c.Target)
		}
	}
	if closes == 0 {
		t.Errorf("no close in the scenario")
	}
}

func firstReason(c schemas.FuseCommand) string {
	if len(c.Reasons) == 0 {
		return ""
	}
	return c.Reasons[0].Text
}
