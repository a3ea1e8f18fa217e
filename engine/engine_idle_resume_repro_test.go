package engine_test

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
)

// TestResumeAfterAllIdleKeepsRecordsOnTime: the publishers pause for
// longer than the idle timeout (every source is marked idle), then the
// backlog arrives at once and the router happens to route one source
// partition's backlog before the others'. No record is older than the
// newest of its own source by more than the lateness, so none should be
// late and the verdicts should be those of the run without the pause.
func TestResumeAfterAllIdleKeepsRecordsOnTime(t *testing.T) {
	cfg, _, err := replay.Production()
	if err != nil {
		t.Fatal(err)
	}
	src := mustGenerate(t, replay.CompactScenario(), 20*time.Minute)
	want := mustDrive(t, cfg, replay.Route(src, replay.RouteConfig{}))
	pause := replay.Pause{At: replay.Start.Add(10 * time.Minute).UnixNano(), Order: replay.Sequential}
	got := mustDrive(t, cfg, replay.Route(src, replay.RouteConfig{Pauses: []replay.Pause{pause}}))
	if got.Stats.LateSpans != 0 || got.Stats.LateCorrections != 0 {
		t.Errorf("%d of %d spans and %d of %d corrections counted late after the pause", got.Stats.LateSpans, src.Spans(), got.Stats.LateCorrections, src.Corrections())
	}
	requireEqualOutput(t, "paused, then one partition's backlog first", want, got)
}
