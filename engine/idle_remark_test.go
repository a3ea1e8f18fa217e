package engine_test

import (
	"math"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/sim/replay"
)

// TestSourcesIdleAtStartMissNoVerdict replays the order that reproduces
// the one failure of pipeline's TestKafkaScaleOutSameVerdictsAsOneProcess
// under load ("2 verdicts of the single process still missing: burnrate
// burn_rate_ticket acme/chat/gpt-4o-mini/canary window end +0s"): span
// partitions 1 and 2 are marked idle just after routing began (the router
// repeats its idle markers while a source looks silent and caught up, as
// at a test's start before its publisher's first records land), and their
// first 21 s are routed after partition 0's and the corrections'. The
// watermark passes the first boundary before their first spans are read,
// and those spans are late (that is what idleness means, and the pipeline
// test's late-span check reports it). But no verdict of the in-order run
// may go missing: the key above has calls only on partitions 1 and 2 in
// its first 20 s, and the burn-rate processor emitted its two verdicts of
// empty windows at the first boundary only when its calls had been
// applied before that boundary was evaluated (on the old code these are
// exactly the 2 verdicts missing here).
func TestSourcesIdleAtStartMissNoVerdict(t *testing.T) {
	t.Parallel()
	cfg, _, err := replay.Production()
	if err != nil {
		t.Fatal(err)
	}
	// The pipeline tests' traffic (internal clusterTraffic), 10 minutes.
	sc := replay.CompactScenario()
	sc.Seed, sc.Rate = 11, 60
	src, err := replay.Generate(sc, replay.Start, 10*time.Minute, replay.GenConfig{SpanPartitions: 3, SpansPerMessage: 100})
	if err != nil {
		t.Fatal(err)
	}
	st := replay.Start.UnixNano()
	cut := st + int64(21*time.Second)
	// Partition 0 and the corrections first up to cut, then all by time.
	order := func(remaining []int, s replay.Sources, next []int) int {
		for _, i := range remaining {
			if (s[i].Topic != replay.SpanTopic || s[i].Partition == 0) && s[i].Messages[next[i]].Spans != nil && s[i].Messages[next[i]].Spans[0].EndUnixNano < cut {
				return i
			}
			if s[i].Topic == replay.CorrectionTopic && s[i].Messages[next[i]].Corrections[0].TimeUnixNano < cut {
				return i
			}
		}
		return replay.ByTime(remaining, s, next)
	}
	keyed := replay.Route(src, replay.RouteConfig{Order: order})
	for p, recs := range keyed {
		var out []engine.KeyedRecord
		for i, r := range recs {
			out = append(out, r)
			if i == 0 {
				for _, sp := range []int32{1, 2} {
					out = append(out, engine.KeyedRecord{Source: engine.SourceRef{Topic: replay.SpanTopic, Partition: sp, Offset: -1},
						SourceMaxEventTime: math.MinInt64, SourceTopics: r.SourceTopics, Idle: true})
				}
			}
		}
		for i := range out {
			out[i].Offset = int64(i)
		}
		keyed[p] = out
	}
	want := mustDrive(t, cfg, replay.Route(src, replay.RouteConfig{}))
	got := mustDrive(t, cfg, keyed)
	if got.Stats.LateSpans == 0 {
		t.Fatal("no late span: the order below does not hold the idle partitions' first spans back")
	}
	seen := map[string]bool{}
	for p := range got.Partitions {
		for _, v := range got.Partitions[p].Verdicts {
			seen[v.ID] = true
		}
	}
	n := 0
	for p := range want.Partitions {
		for _, v := range want.Partitions[p].Verdicts {
			if !seen[v.ID] {
				n++
				if n <= 10 {
					t.Errorf("missing: keyed partition %d %s %s %s window end +%v (%s in the in-order run)", p, v.Processor, v.Metric, v.Key, time.Duration(v.WindowEndUnixNano-st), v.Status)
				}
			}
		}
	}
	if n > 0 {
		t.Errorf("%d verdicts of the in-order run missing (%d late spans)", n, got.Stats.LateSpans)
	}
}
