package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// restartChildEnv names the SLO file a child process runs the pipeline on.
const restartChildEnv = "FUSEBOX_RESTART_CHILD_CONFIG"

// TestKafkaRestartAfterSIGKILLMatchesUninterrupted runs the pipeline as a child
// process (this test binary re-executed), kills it with SIGKILL at several
// points of the stream — half a second after it starts (joining its
// groups, restoring state), and once 25%, 50% and 75% of the verdicts are
// out — restarting it each time, and compares what reached
// the verdict and fuse topics with an uninterrupted run's: every verdict id
// with the same value (the stable JSON of every field), every fuse command,
// nothing extra, and no id written twice with different values. Replayed
// output may be written twice; it must be identical.
func TestKafkaRestartAfterSIGKILLMatchesUninterrupted(t *testing.T) {
	t.Parallel()
	want := clusterReference(t)
	k := startTestCluster(t)
	publishClusterTraffic(t, k, 0, 0)
	dir := t.TempDir()
	cfgPath := writeClusterConfig(t, dir, k.Brokers)
	col := startClusterCollector(t, k)

	total := len(want.verdicts)
	for i, frac := range []float64{0, 0.25, 0.5, 0.75} {
		child := startRestartChild(t, cfgPath, filepath.Join(dir, fmt.Sprintf("child%d.log", i)))
		if frac == 0 {
			// Killed while it joins its groups and restores state.
			time.Sleep(500 * time.Millisecond)
		} else {
			// Killed once the output reaches frac of the verdicts, and this
			// child has written at least 200 new ones (a restart replays
			// up to a checkpoint interval first).
			target := max(int(frac*float64(total)), col.count()+200)
			if !testharness.Poll(90*time.Second, func() bool { return col.count() >= target || child.exited() }) {
				t.Fatalf("child %d: %d distinct verdicts after 90s, waiting for %d", i, col.count(), target)
			}
		}
		if child.exited() {
			t.Fatalf("child %d exited on its own: %v; log %s", i, child.err, child.logPath)
		}
		reached := col.count()
		child.kill(t)
		t.Logf("child %d SIGKILLed at %d of %d distinct verdicts", i, reached, total)
	}
	last := startRestartChild(t, cfgPath, filepath.Join(dir, "child-last.log"))
	// Wait for the commands too: a child killed after its last verdicts
	// were durable but before the commands citing them were produced
	// leaves those commands to the last child's replay, which on a loaded
	// machine can take longer than the grace period below.
	if !testharness.Poll(120*time.Second, func() bool {
		n, _ := col.missing(want, 1<<62)
		nc, _ := col.missingCommands(want)
		return (n == 0 && nc == 0) || last.exited()
	}) || last.exited() {
		n, example := col.missing(want, 1<<62)
		nc, exampleCmd := col.missingCommands(want)
		t.Fatalf("after the last restart %d verdicts (e.g. %s) and %d fuse commands (e.g. %s) of the uninterrupted run are still missing; child exited %v: %v; log %s",
			n, example, nc, exampleCmd, last.exited(), last.err, last.logPath)
	}
	// Absence: let anything the last child would still write (a duplicate
	// the comparison must see) arrive, then stop it the polite way.
	time.Sleep(2 * time.Second)
	last.terminate(t)
	got := readClusterOutput(t, k)
	compareClusterOutputs(t, "restarted 4 times", want, got)
	t.Logf("restarted run: %d distinct verdicts from %d verdict records, %d fuse commands", len(got.verdicts), got.records, len(got.commands))
}

// TestRestartChildProcess is not a test of its own: it is the pipeline
// process of TestKafkaRestartAfterSIGKILLMatchesUninterrupted, run when this
// test binary is re-executed with FUSEBOX_RESTART_CHILD_CONFIG set, until
// SIGTERM (or SIGKILL). Without the variable it does nothing.
func TestRestartChildProcess(t *testing.T) {
	path := os.Getenv(restartChildEnv)
	if path == "" {
		return
	}
	runChildPipeline(t, path, pipeline.Options{KgoOpts: clusterGroupOpts()})
}

// startRestartChild runs TestRestartChildProcess on cfgPath in a child
// process (this test binary re-executed), its output in logPath.
func startRestartChild(t *testing.T, cfgPath, logPath string) *restartChild {
	t.Helper()
	return startChild(t, "TestRestartChildProcess", restartChildEnv, cfgPath, logPath, nil)
}
