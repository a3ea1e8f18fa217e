package pipeline_test

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// TestKafkaScaleOutPhased: the traffic arrives in three bursts separated by
// pauses longer than the idle timeout (every source marked idle between
// them); membership changes between bursts.
func TestKafkaScaleOutPhased(t *testing.T) {
	want := clusterReference(t)
	k := startTestCluster(t)
	cfg := parseClusterConfig(t, k.Brokers)
	col := startClusterCollector(t, k)
	cp := newClusterCheckpoints()
	waitPhase := func(name string, end time.Duration) {
		t.Helper()
		until := replay.Start.Add(end - clusterLateness).UnixNano()
		if end == 0 {
			until = 1 << 62
		}
		if !testharness.Poll(90*time.Second, func() bool { n, _ := col.missing(want, until); return n == 0 }) {
			n, example := col.missing(want, until)
			t.Fatalf("%s: %d missing (e.g. %s)", name, n, example)
		}
		// The gap between bursts the test is about: longer than
		// idle_source_timeout (2 s), so every source goes idle.
		time.Sleep(3 * time.Second)
	}
	publishClusterTraffic(t, k, 0, 12*time.Minute)
	p1, stop1 := startClusterPipeline(t, cfg, cp.record)
	p2, stop2 := startClusterPipeline(t, cfg, cp.record)
	waitPhase("phase 1", 12*time.Minute)
	p3, stop3 := startClusterPipeline(t, cfg, cp.record)
	publishClusterTraffic(t, k, 12*time.Minute, 24*time.Minute)
	waitPhase("phase 2", 24*time.Minute)
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	publishClusterTraffic(t, k, 24*time.Minute, 0)
	waitPhase("phase 3", 0)
	_ = cp.waitDrained(t, k, col, 60*time.Second)
	for _, stop := range []func() error{stop2, stop3} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range []*pipeline.Pipeline{p1, p2, p3} {
		st := p.Keyed().Stats()
		if st.LateSpans != 0 || st.LateCorrections != 0 {
			t.Errorf("process %d: %d late spans, %d late corrections", i+1, st.LateSpans, st.LateCorrections)
		}
	}
	compareClusterOutputs(t, "phased", want, readClusterOutput(t, k))
}
