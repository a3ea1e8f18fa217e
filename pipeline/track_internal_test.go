package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

func TestTrackerCountsOutput(t *testing.T) {
	tr := newTracker()
	a := schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: schemas.Wildcard}
	b := schemas.Key{Tenant: "globex", Service: "chat", Model: "m", Variant: schemas.Wildcard}
	cmd := func(k schemas.Key, v uint64, act schemas.Action, st schemas.BreakerState) schemas.FuseCommand {
		return schemas.FuseCommand{Target: k, Version: v, Action: act, State: st}
	}
	s := tr.sink()
	for _, out := range []schemas.Output{
		{Verdicts: []schemas.Verdict{{Processor: "tail", Status: schemas.StatusOK}, {Processor: "tail", Status: schemas.StatusBreach}},
			Commands: []schemas.FuseCommand{cmd(a, 1, schemas.ActionTrip, schemas.StateOpen)}},
		{Verdicts: []schemas.Verdict{{Processor: "tail", Status: schemas.StatusOK}},
			Commands: []schemas.FuseCommand{cmd(a, 2, schemas.ActionHalfOpen, schemas.StateHalfOpen), cmd(b, 1, schemas.ActionDegrade, schemas.StateOpen)}},
		// A replay of an older command of a: counted as emitted, but the
		// target's state stays at its newest version.
		{Commands: []schemas.FuseCommand{cmd(a, 1, schemas.ActionTrip, schemas.StateOpen)}},
	} {
		if err := s.Write(context.Background(), out); err != nil {
			t.Fatal(err)
		}
	}
	if got := tr.verdicts[verdictKey{"tail", schemas.StatusOK}]; got != 2 {
		t.Errorf("tail ok = %d, want 2", got)
	}
	if got := tr.verdicts[verdictKey{"tail", schemas.StatusBreach}]; got != 1 {
		t.Errorf("tail breach = %d, want 1", got)
	}
	if got := tr.commands[schemas.ActionTrip]; got != 2 {
		t.Errorf("trip commands = %d, want 2", got)
	}
	if st := tr.targets[a]; st.state != schemas.StateHalfOpen || st.version != 2 {
		t.Errorf("target a = %+v, want half_open v2", st)
	}
	if st := tr.targets[b]; st.state != schemas.StateOpen {
		t.Errorf("target b = %+v, want open", st)
	}
}

// TestTrackerReady follows /readyz through a start: not running, then
// waiting for each group's assignment, then a keyed partition restoring
// its checkpoint, then ready, then stopped. The partition counts are the
// consumers' (ingest.Stats).
func TestTrackerReady(t *testing.T) {
	tr := newTracker()
	var source, keyed ingest.Stats
	ready := func() error { return tr.ready("g.router", "g.engine", source, keyed) }
	want := func(sub string) {
		t.Helper()
		err := ready()
		switch {
		case sub == "" && err != nil:
			t.Fatalf("not ready: %v", err)
		case sub != "" && (err == nil || !strings.Contains(err.Error(), sub)):
			t.Fatalf("ready() = %v, want an error containing %q", err, sub)
		}
	}
	want("not running yet")
	tr.state.Store(trackerRunning)
	want("g.router has assigned no source partition")
	want("g.engine has assigned no keyed partition")
	source.Partitions = 1
	keyed.Partitions, keyed.Starting = 1, 1 // assigned, Start not returned yet
	want("1 keyed partition(s) still restoring")
	keyed.Starting = 0
	want("")
	keyed.Partitions = 0
	want("g.engine has assigned no keyed partition")
	tr.state.Store(trackerStopped)
	want("stopped")
}

func TestSinkSampleMapping(t *testing.T) {
	var s observe.Snapshot
	for _, m := range []sinks.Metric{
		{Name: "fusebox_sink_records_total", Labels: []sinks.Label{{Name: "sink", Value: "clickhouse"}, {Name: "table", Value: "verdicts"}}, Value: 7},
		{Name: "fusebox_sink_errors_total", Labels: []sinks.Label{{Name: "sink", Value: "kafka"}, {Name: "topic", Value: "fusebox.fuse"}}, Value: 2},
		{Name: "fusebox_sink_pending_records", Kind: sinks.Gauge, Labels: []sinks.Label{{Name: "sink", Value: "kafka"}}, Value: 3},
	} {
		sinkSample(&s, m)
	}
	if len(s.SinkRecordsOut) != 1 || s.SinkRecordsOut[0] != (observe.SinkCount{Sink: "clickhouse", Destination: "verdicts", Count: 7}) {
		t.Errorf("records: %+v", s.SinkRecordsOut)
	}
	if len(s.SinkErrors) != 1 || s.SinkErrors[0] != (observe.SinkCount{Sink: "kafka", Destination: "fusebox.fuse", Count: 2}) {
		t.Errorf("errors: %+v", s.SinkErrors)
	}
	if len(s.Extra) != 1 || s.Extra[0].Name != "fusebox_sink_pending_records" || s.Extra[0].Kind != observe.GaugeSample || s.Extra[0].Value != 3 {
		t.Errorf("extra: %+v", s.Extra)
	}
}

// TestTrackerBreakerLogAndOpenTargets: one INFO line per state change of
// a target naming its action, state, SLO, incident id and the reason with
// the value that caused it; none for a replay or a repeat of the same
// state; the open-targets gauge by SLO, action, state and incident, a
// series at 0 once (the next scrape) when its targets leave it, then
// gone.
func TestTrackerBreakerLogAndOpenTargets(t *testing.T) {
	var b strings.Builder
	tr := newTracker()
	l, _ := observe.NewLogger(&b, "info")
	tr.log = l.With("component", "breaker") // as Assemble does
	a := schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: schemas.Wildcard}
	breach := schemas.Verdict{ID: "v1", SLO: "chat-p999", Processor: "tail", Status: schemas.StatusBreach}
	trip := schemas.FuseCommand{Target: a, Version: 1, Action: schemas.ActionTrip, State: schemas.StateOpen,
		Reasons:        []schemas.Reason{{VerdictID: "v1", Text: "trip (3 of last 5, k=3): tail/chat-p999/latency breach value=2.5 budget=1"}},
		CorrelationIDs: []string{"inc1", "slo:chat-p999"}}
	half := schemas.FuseCommand{Target: a, Version: 2, Action: schemas.ActionHalfOpen, State: schemas.StateHalfOpen,
		Reasons: []schemas.Reason{{VerdictID: "v1", Text: "half-open after 1m cool-down"}}, CorrelationIDs: []string{"inc1", "slo:chat-p999"}}
	closeCmd := schemas.FuseCommand{Target: a, Version: 3, Action: schemas.ActionClose, State: schemas.StateClosed, CorrelationIDs: []string{"inc1", "slo:chat-p999"}}
	s := tr.sink()
	write := func(out schemas.Output) {
		t.Helper()
		if err := s.Write(context.Background(), out); err != nil {
			t.Fatal(err)
		}
	}
	gauge := func() map[string]int64 {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		m := map[string]int64{}
		for _, c := range tr.openTargets() {
			m[c.SLO+"/"+c.Action+"/"+c.State+"/"+c.Incident] = c.Count
		}
		return m
	}
	if n := tr.commands[schemas.ActionTrip]; n != 0 {
		t.Fatalf("trip count %d before any command", n)
	}
	if len(tr.commands) != len(commandActions) {
		t.Errorf("%d actions counted from the start, want %d", len(tr.commands), len(commandActions))
	}
	write(schemas.Output{Verdicts: []schemas.Verdict{breach}, Commands: []schemas.FuseCommand{trip}})
	write(schemas.Output{Commands: []schemas.FuseCommand{trip}}) // replay: no line
	if g := gauge(); len(g) != 1 || g["chat-p999/trip/open/inc1"] != 1 {
		t.Errorf("open targets after the trip: %v", g)
	}
	write(schemas.Output{Commands: []schemas.FuseCommand{half}}) // no verdict: keeps the tripping SLO
	if g, ok := gauge()["chat-p999/trip/open/inc1"]; !ok || g != 0 {
		t.Errorf("the trip's series after half-open: %v, %v; want a 0", g, ok)
	}
	if g := gauge(); len(g) != 1 || g["chat-p999/half_open/half_open/inc1"] != 1 {
		t.Errorf("open targets after half-open, the next scrape: %v", g)
	}
	write(schemas.Output{Commands: []schemas.FuseCommand{closeCmd}})
	if g, ok := gauge()["chat-p999/half_open/half_open/inc1"]; len(gauge()) != 0 || !ok || g != 0 {
		t.Errorf("open targets after close: the half-open series %v, %v; want one 0, then nothing", g, ok)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want 3 (trip, half-open, close):\n%s", len(lines), b.String())
	}
	for i, want := range []string{
		`"level":"INFO","msg":"breaker state change","component":"breaker","target":"` + a.String() + `","action":"trip","state":"open","from":"closed","slo":"chat-p999","incident":"inc1"`,
		`"action":"half_open","state":"half_open","from":"open","slo":"chat-p999"`,
		`"action":"close","state":"closed","from":"half_open","slo":"chat-p999"`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %s\nwant it to contain %s", i, lines[i], want)
		}
	}
	if !strings.Contains(lines[0], "value=2.5 budget=1") {
		t.Errorf("the trip line does not carry the value that caused it: %s", lines[0])
	}
}
