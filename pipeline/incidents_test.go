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
  commands:
    - {slo: latency}
`
	cfg, err := config.Parse("incidents.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	sc := traffic.Demo()
	sc.Rate = 100
	sc.Incidents = []traffic.Incident{{Name: "slow model", Kind: traffic.TailBlowup, Start: 4 * time.Minute, End: 10 * time.Minute,
		Target: traffic.Target{Model: "claude-3-5-haiku"}, Magnitude: 0.03}}
	start := time.Unix(1_800_000_000, 0)
	end := publish(t, k, sc, start, 14*time.Minute)
	run := startRunWith(t, pipeline.Options{Config: cfg, Logger: testLogger(t)})

	var incs []schemas.Incident
	want := end.Add(-2 * time.Minute).UnixNano()
	if !testharness.Poll(90*time.Second, func() bool {
		b, _ := os.ReadFile(jsonl)
		incs, err = jsonlsink.ReadIncidents(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range incs {
			if i.Status == schemas.IncidentClosed || i.AtUnixNano >= want {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no incident record closed or at %v after 90s: %d records", time.Unix(0, want), len(incs))
	}
	run.stop(t)

	b, _ := os.ReadFile(jsonl)
	incs, _ = jsonlsink.ReadIncidents(b)
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
	_, cmds := readJSONL(t, jsonl)
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
	onKafka := k.ReadAll(t, cfg.Topics.Fuse, len(cmds), 30*time.Second)
	if len(onKafka) < len(cmds) {
		t.Fatalf("%d commands on %s, %d in the JSONL file", len(onKafka), cfg.Topics.Fuse, len(cmds))
	}
	t.Logf("%d commands (%d open) for %s", len(cmds), opens, level.String())
}
