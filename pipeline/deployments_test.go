package pipeline_test

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"go.yaml.in/yaml/v3"
)

// betaYAML is a second deployment's SLO file on the cluster traffic: other
// SLOs (a tighter latency budget, no drift, corrections or scaling), another
// version, group beta.
func betaYAML(t *testing.T, brokers []string, mutate func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(clusterYAML(t, brokers), &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = "beta-1"
	var slos []any
	for _, s := range doc["slos"].([]any) {
		m := s.(map[string]any)
		switch m["name"] {
		case "latency-p999":
			tl := m["tail"].(map[string]any)
			tl["budget"] = 3000
			tl["window"] = "5m"
			slos = append(slos, m)
		case "availability", "alignment-trend":
			slos = append(slos, m)
		}
	}
	doc["slos"] = slos
	doc["breaker"] = map[string]any{"rules": []any{
		map[string]any{"processor": "tail", "action": "degrade", "fallback": "small"},
		map[string]any{"processor": "burnrate", "metric": "burn_rate_page", "action": "trip"},
	}}
	if mutate != nil {
		mutate(doc)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withGroupTopics(group, keyed, state string) func(doc map[string]any) {
	return func(doc map[string]any) {
		doc["kafka"].(map[string]any)["group"] = group
		topics := doc["topics"].(map[string]any)
		topics["keyed"], topics["state"] = keyed, state
		topics["verdicts"], topics["fuse"] = group+".verdicts", group+".fuse"
	}
}

func parseYAML(t *testing.T, name string, b []byte) *config.File {
	t.Helper()
	f, err := config.Parse(name, b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestKafkaTwoDeploymentsShareOneCluster runs two deployments with different
// SLO files side by side on one broker, reading the same source topics and
// — the hard case: their operators pinned the same names — writing the same
// keyed topic and checkpointing to the same state topic. Each one stops
// and restarts while the other runs (alpha stops first, beta stops while
// alpha is down, beta restarts first), and each one's verdicts and fuse
// commands must equal, value for value, those of its solo run on a cluster
// of its own: neither took the other's keyed records or checkpoints, and
// both kept their state across the restarts (processors restarted empty
// would give other verdicts after the restart). Both must have seen and
// skipped the other's records.
func TestKafkaTwoDeploymentsShareOneCluster(t *testing.T) {
	t.Parallel()
	wantA := clusterReference(t)
	wantB := runSolo(t, func(brokers []string) *config.File { return parseYAML(t, "beta-solo.yaml", betaYAML(t, brokers, nil)) })
	t.Logf("solo runs: alpha %d verdicts %d commands, beta %d verdicts %d commands", len(wantA.verdicts), len(wantA.commands), len(wantB.verdicts), len(wantB.commands))
	if len(wantB.verdicts) == 0 || len(wantB.commands) == 0 {
		t.Fatalf("beta's solo run: %d verdicts, %d commands: too weak a reference", len(wantB.verdicts), len(wantB.commands))
	}

	k := startTestCluster(t)
	publishClusterTraffic(t, k, 0, 0)
	var docA map[string]any
	if err := yaml.Unmarshal(clusterYAML(t, k.Brokers), &docA); err != nil {
		t.Fatal(err)
	}
	withGroupTopics("alpha", "shared.keyed", "shared.state")(docA)
	yA, err := yaml.Marshal(docA)
	if err != nil {
		t.Fatal(err)
	}
	cfgA := parseYAML(t, "alpha.yaml", yA)
	cfgB := parseYAML(t, "beta.yaml", betaYAML(t, k.Brokers, withGroupTopics("beta", "shared.keyed", "shared.state")))
	colA := startOutputCollector(t, k, "alpha.verdicts", "alpha.fuse")
	colB := startOutputCollector(t, k, "beta.verdicts", "beta.fuse")

	pA, stopA := startClusterPipeline(t, cfgA, nil)
	pB, stopB := startClusterPipeline(t, cfgB, nil)
	waitFor := func(name string, col *clusterCollector, n int) {
		t.Helper()
		if !testharness.Poll(90*time.Second, func() bool { return col.count() >= n }) {
			t.Fatalf("%s: %d distinct verdicts after 90s, waiting for %d", name, col.count(), n)
		}
	}
	waitFor("alpha", colA, len(wantA.verdicts)/4)
	if err := stopA(); err != nil {
		t.Fatalf("alpha stop: %v", err)
	}
	keyedA, _ := pA.ForeignRecords()
	t.Logf("alpha stopped at %d of %d verdicts; it skipped %d keyed records of beta", colA.count(), len(wantA.verdicts), keyedA)
	waitFor("beta", colB, len(wantB.verdicts)/2)
	if err := stopB(); err != nil {
		t.Fatalf("beta stop: %v", err)
	}
	keyedB, _ := pB.ForeignRecords()
	t.Logf("beta stopped at %d of %d verdicts; it skipped %d keyed records of alpha", colB.count(), len(wantB.verdicts), keyedB)
	if keyedA == 0 && keyedB == 0 {
		t.Fatal("neither deployment saw a keyed record of the other: the test does not share the keyed topic")
	}

	pB2, stopB2 := startClusterPipeline(t, cfgB, nil)
	pA2, stopA2 := startClusterPipeline(t, cfgA, nil)
	done := func(col *clusterCollector, want *clusterOutput) bool {
		n, _ := col.missing(want, 1<<62)
		nc, _ := col.missingCommands(want)
		return n == 0 && nc == 0
	}
	if !testharness.Poll(120*time.Second, func() bool { return done(colA, wantA) && done(colB, wantB) }) {
		na, ea := colA.missing(wantA, 1<<62)
		nb, eb := colB.missing(wantB, 1<<62)
		t.Fatalf("after the restarts alpha misses %d verdicts (e.g. %s), beta %d (e.g. %s)", na, ea, nb, eb)
	}
	// Absence: anything either would still write (a duplicate, a stray
	// command) has 2 s to show before the outputs are compared.
	time.Sleep(2 * time.Second)
	if err := stopA2(); err != nil {
		t.Fatalf("alpha: %v", err)
	}
	if err := stopB2(); err != nil {
		t.Fatalf("beta: %v", err)
	}
	_, stateA := pA2.ForeignRecords()
	_, stateB := pB2.ForeignRecords()
	if stateA == 0 || stateB == 0 {
		t.Errorf("restored from a shared state topic, alpha skipped %d checkpoint records of beta and beta %d of alpha; want both > 0", stateA, stateB)
	}
	compareClusterOutputs(t, "alpha beside beta", wantA, readOutput(t, k, "alpha.verdicts", "alpha.fuse"))
	compareClusterOutputs(t, "beta beside alpha", wantB, readOutput(t, k, "beta.verdicts", "beta.fuse"))
}

// TestInternalTopicsDerivedFromGroup: without topics.keyed / topics.state
// a deployment's internal topics are named after its group; named ones
// are kept.
func TestInternalTopicsDerivedFromGroup(t *testing.T) {
	for _, c := range []struct{ yaml, keyed, state string }{
		{"kafka: {group: fusebox}\n", "fusebox.keyed", "fusebox.state"},
		{"kafka: {group: team-a}\n", "team-a.keyed", "team-a.state"},
		{"kafka: {group: team-a}\ntopics: {keyed: k1}\n", "k1", "team-a.state"},
		{"kafka: {group: team-a}\ntopics: {state: s1, keyed: fusebox.keyed}\n", "fusebox.keyed", "s1"},
	} {
		f := parseYAML(t, "f.yaml", []byte(c.yaml+"slos: [{name: a, burnrate: {target: 0.999}}]\n"))
		if f.Topics.Keyed != c.keyed || f.Topics.State != c.state || f.Deployment() != f.Kafka.Group {
			t.Errorf("%q: keyed %q state %q deployment %q, want %q %q %q", c.yaml, f.Topics.Keyed, f.Topics.State, f.Deployment(), c.keyed, c.state, f.Kafka.Group)
		}
	}
}
