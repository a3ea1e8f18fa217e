package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
)

// TestKafkaIncidentStageOneCommandForASlowModel runs the product with
// incidents.enabled on a slow model (every tenant's calls to it): the
// workers' summaries go through topics.summaries to the incident stage
// (its own consumer group and checkpoints), which attributes the breaches
// to the model, writes the incident to the JSONL sink, and writes the
// one level command (*/*/claude-3-5-haiku/*) to the fuse topic while the
// per-key breaker's commands of the SLO are suppressed.
func TestKafkaIncidentStageOneCommandForASlowModel(t *testing.T) {
	k := testharness.StartBroker(t)
	jsonl := filepath.Join(t.TempDir(), "out.jsonl")
	cfg := incidentConfig(t, k, jsonl)
	start := time.Unix(1_800_000_000, 0)
	end := publish(t, k, slowModelScenario(), start, 14*time.Minute)
	run := startRunWith(t, pipeline.Options{Config: cfg, Logger: testLogger(t)})
	waitIncidents(t, []string{jsonl}, end.Add(-2*time.Minute).UnixNano())
	run.stop(t)
	checkSlowModel(t, k, cfg, start, []string{jsonl})
}

// slowModelScenario is the demo traffic (36 keys) at 100 calls/s with
// claude-3-5-haiku slow for every tenant from 4m to 10m.
func slowModelScenario() traffic.Scenario {
	sc := traffic.Demo()
	sc.Rate = 100
	sc.Incidents = []traffic.Incident{{Name: "slow model", Kind: traffic.TailBlowup, Start: 4 * time.Minute, End: 10 * time.Minute,
		Target: traffic.Target{Model: "claude-3-5-haiku"}, Magnitude: 0.03}}
	return sc
}

func incidentConfig(t *testing.T, k *testharness.Kafka, jsonl string) *config.File {
	t.Helper()
	y := "kafka:\n  brokers: [" + strings.Join(k.Brokers, ", ") + "]\n" + `
time: {idle_source_timeout: 1s, checkpoint_every: 500ms, allowed_lateness: 5s}
topics: {keyed_partitions: 4}
signing: {insecure_unsigned: true}
sinks: {kafka: {enabled: true}, jsonl: {path: ` + jsonl + `}}
slos:
  - name: latency
    tail: {metric: duration_ms, p: 0.999, budget: 6000, window: 5m, every: 1m}
breaker:
  rules:
    - {processor: tail, action: trip}
incidents:
  enabled: true
  # The traffic is a backlog published before the start: the keyed
  # partitions catch up at their own pace, up to its 14 minutes apart.
  max_wait: 1000
  commands:
    - {slo: latency}
`
	cfg, err := config.Parse("incidents.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// readIncidents reads the incident records of the JSONL files, each id
// once (a replay writes a record again with its id), in file order.
func readIncidents(t *testing.T, files []string) []schemas.Incident {
	t.Helper()
	seen := map[string]bool{}
	var out []schemas.Incident
	for _, f := range files {
		b, _ := os.ReadFile(f)
		incs, err := jsonlsink.ReadIncidents(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range incs {
			if !seen[i.ID] {
				seen[i.ID] = true
				out = append(out, i)
			}
		}
	}
	return out
}

// waitIncidents waits for an incident record at want (Unix ns) or later.
func waitIncidents(t *testing.T, files []string, want int64) {
	t.Helper()
	var n int
	if !testharness.Poll(90*time.Second, func() bool {
		incs := readIncidents(t, files)
		n = len(incs)
		for _, i := range incs {
			if i.AtUnixNano >= want {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no incident record at %v after 90s: %d records", time.Unix(0, want), n)
	}
}

// checkSlowModel asserts one model=claude-3-5-haiku incident and only its
// level's commands, and returns the records.
func checkSlowModel(t *testing.T, k *testharness.Kafka, cfg *config.File, start time.Time, files []string) []schemas.Incident {
	t.Helper()
	incs := readIncidents(t, files)
	var opened []schemas.Incident
	for _, i := range incs {
		if i.Status == schemas.IncidentOpened {
			opened = append(opened, i)
		}
	}
	if len(opened) != 1 || opened[0].Dimension != "model" || opened[0].Value != "claude-3-5-haiku" {
		t.Fatalf("opened %+v, want one model=claude-3-5-haiku", opened)
	}
	t.Logf("opened %s=%s at +%v: %d of %d keys breach, others %d/%d, p=%.3g; %d records",
		opened[0].Dimension, opened[0].Value, time.Duration(opened[0].AtUnixNano-start.UnixNano()), opened[0].Breaching,
		opened[0].Breaching+opened[0].Healthy, opened[0].OtherBreaching, opened[0].OtherBreaching+opened[0].OtherHealthy, opened[0].PValue, len(incs))

	// The fuse topic: the level's command and nothing per key.
	var cmds []schemas.FuseCommand
	for _, f := range files {
		_, cs := readJSONL(t, f)
		cmds = append(cmds, cs...)
	}
	level := schemas.Key{Tenant: "*", Service: "*", Model: "claude-3-5-haiku", Variant: "*"}
	opens := 0
	for _, c := range cmds {
		if c.Target != level {
			t.Errorf("a command for %s: per-key commands must be suppressed under the incident", c.Target.String())
		}
		if c.State == schemas.StateOpen {
			opens++
		}
		if len(c.CorrelationIDs) == 0 || c.CorrelationIDs[0] != opened[0].IncidentID {
			t.Errorf("command %s %s carries %v, not the incident id %s", c.Target.String(), c.State, c.CorrelationIDs, opened[0].IncidentID)
		}
	}
	if opens == 0 {
		t.Fatalf("no open command for %s among %d", level.String(), len(cmds))
	}
	// The incident records on topics.incidents: the JSONL files' ones.
	onTopic := map[string]bool{}
	for _, r := range k.ReadAll(t, cfg.Topics.Incidents, len(incs), 30*time.Second) {
		i, err := sinks.UnmarshalIncidentJSON(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Key) != i.IncidentID {
			t.Errorf("record %s keyed %q, not by its incident id", i.ID, r.Key)
		}
		onTopic[i.ID] = true
	}
	for _, i := range incs {
		if !onTopic[i.ID] {
			t.Errorf("incident record %s (%s) is not on %s", i.ID, i.Status, cfg.Topics.Incidents)
		}
	}
	onKafka := k.ReadAll(t, cfg.Topics.Fuse, len(cmds), 30*time.Second)
	if len(onKafka) < len(cmds) {
		t.Fatalf("%d commands on %s, %d in the JSONL files", len(onKafka), cfg.Topics.Fuse, len(cmds))
	}
	t.Logf("%d commands (%d open) for %s", len(cmds), opens, level.String())
	return incs
}

// TestKafkaIncidentStageTwoProcesses: the same traffic through two
// processes (two pipelines in each consumer group: keyed partitions and
// the incident stage's partitions split between them, moving while they
// join) gives the incident records of one process, id for id.
func TestKafkaIncidentStageTwoProcesses(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	ids := func(incs []schemas.Incident) map[string]schemas.IncidentStatus {
		m := map[string]schemas.IncidentStatus{}
		for _, i := range incs {
			m[i.ID] = i.Status
		}
		return m
	}
	// One process.
	k1 := testharness.StartBroker(t)
	one := filepath.Join(t.TempDir(), "one.jsonl")
	cfg1 := incidentConfig(t, k1, one)
	end := publish(t, k1, slowModelScenario(), start, 14*time.Minute)
	r := startRunWith(t, pipeline.Options{Config: cfg1, Logger: testLogger(t)})
	last := end.Add(-2 * time.Minute).UnixNano()
	waitIncidents(t, []string{one}, last)
	r.stop(t)
	want := ids(checkSlowModel(t, k1, cfg1, start, []string{one}))

	// Two processes on another broker.
	k2 := testharness.StartBroker(t)
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
	publish(t, k2, slowModelScenario(), start, 14*time.Minute)
	var runs []*e2eRun
	for _, f := range files {
		runs = append(runs, startRunWith(t, pipeline.Options{Config: incidentConfig(t, k2, f), Logger: testLogger(t)}))
	}
	waitIncidents(t, files, last)
	for _, r := range runs {
		r.stop(t)
	}
	got := checkSlowModel(t, k2, incidentConfig(t, k2, files[0]), start, files)
	written := 0
	for _, f := range files {
		if b, _ := os.ReadFile(f); len(b) > 0 {
			written++
		}
	}
	t.Logf("two processes: %d distinct records; %d of 2 files hold output", len(got), written)
	for id, st := range ids(got) {
		if w, ok := want[id]; !ok || w != st {
			t.Errorf("record %s (%s) not in the one-process run", id, st)
		}
	}
	// The one-process run may have gone on a record further before it
	// stopped; every record up to the two-process run's last must be there.
	lastGot := int64(0)
	for _, i := range got {
		lastGot = max(lastGot, i.AtUnixNano)
	}
	for _, i := range readIncidents(t, []string{one}) {
		if i.AtUnixNano <= lastGot && !func() bool { _, ok := ids(got)[i.ID]; return ok }() {
			t.Errorf("the one-process record %s (%s at %v) is missing from the two processes' output", i.ID, i.Status, time.Unix(0, i.AtUnixNano))
		}
	}
}
