package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// TestKafkaRestartUnderAnEditedSLOFileLogsWhatItKept stops a pipeline midway
// and restarts it with an edited SLO file — a budget changed (kept), a
// window changed (reset), an SLO added, one removed, the breaker's target
// dimensions unchanged (kept) — and checks that the keyed stage says so
// at start, once for all partitions, in the words of `fusebox config
// diff` (config.PlanEdit).
func TestKafkaRestartUnderAnEditedSLOFileLogsWhatItKept(t *testing.T) {
	t.Parallel()
	k := startTestCluster(t)
	publishClusterTraffic(t, k, 0, 0)
	old := parseClusterConfig(t, k.Brokers)
	var doc map[string]any
	if err := yaml.Unmarshal(clusterYAML(t, k.Brokers), &doc); err != nil {
		t.Fatal(err)
	}
	var slos []any
	for _, s := range doc["slos"].([]any) {
		m := s.(map[string]any)
		switch m["name"] {
		case "latency-p999":
			m["tail"].(map[string]any)["budget"] = 4000
		case "alignment-trend":
			m["decay"].(map[string]any)["window"] = "30m"
		case "capacity":
			continue
		}
		slos = append(slos, m)
	}
	doc["slos"] = append(slos, map[string]any{"name": "ttft-p99", "tail": map[string]any{"metric": "ttft_ms", "p": 0.99, "budget": 2000}})
	var rules []any
	for _, r := range doc["breaker"].(map[string]any)["rules"].([]any) {
		if r.(map[string]any)["processor"] != "scaling" {
			rules = append(rules, r)
		}
	}
	doc["breaker"].(map[string]any)["rules"] = rules
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	edited := parseYAML(t, "edited.yaml", b)
	plan, err := config.PlanEdit(old, edited)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Names("kept") + " | " + plan.Names("reset") + " | " + plan.Names("added") + " | " + plan.Names("removed") + " | " + string(plan.Breaker); got !=
		"latency-p999,canary-confidence,user-corrections,availability,_rollup | alignment-trend | ttft-p99 | capacity | kept" {
		t.Fatalf("plan: %s", got)
	}

	col := startClusterCollector(t, k)
	_, stop := startClusterPipeline(t, old, nil)
	if !testharness.Poll(90*time.Second, func() bool { return col.count() >= 1500 }) {
		t.Fatalf("%d verdicts after 90s", col.count())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := pipeline.New(ctx, pipeline.Options{Config: edited, Logger: logs.logger(), KgoOpts: clusterGroupOpts()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	restoreLines := func() []map[string]any {
		var out []map[string]any
		for _, l := range logs.lines() {
			if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "restored checkpoint") {
				out = append(out, l)
			}
		}
		return out
	}
	if !testharness.Poll(60*time.Second, func() bool {
		return len(p.Keyed().Partitions()) == int(old.Topics.KeyedPartitions) && len(restoreLines()) > 0
	}) {
		t.Fatalf("no restore logged after 60s; logs: %v", logs.lines())
	}
	// Absence: room for a second restore line to show (read again after).
	time.Sleep(500 * time.Millisecond)
	restored := restoreLines()
	if len(restored) != 1 {
		t.Fatalf("%d restore lines at info/warn for %d partitions with one outcome, want 1: %v", len(restored), old.Topics.KeyedPartitions, restored)
	}
	l := restored[0]
	for field, want := range map[string]string{"level": "WARN", "kept": plan.Names("kept"), "reset": "alignment-trend", "added": "ttft-p99",
		"removed": "capacity", "breaker": "kept"} {
		if got, _ := l[field].(string); got != want {
			t.Errorf("restore log %s = %q, want %q (line %v)", field, got, want, l)
		}
	}
}
