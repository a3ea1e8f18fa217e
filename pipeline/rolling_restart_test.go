package pipeline_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// rollingSessionTimeout is the groups' session timeout in the rolling
// restart: longer than a restart takes (a static member that does not
// leave keeps its place that long), short enough for a test.
const rollingSessionTimeout = 15 * time.Second

// startRollingMember starts one member of the rolling restart: cfg with
// static membership as instance id, not leaving its groups at shutdown.
func startRollingMember(t *testing.T, base *config.File, id string, onCheckpoint func(int32, int64)) (*pipeline.Pipeline, func() error) {
	t.Helper()
	cfg := *base
	cfg.Kafka.InstanceID = id
	cfg.Kafka.LeaveOnShutdown = false
	return startPipelineWith(t, &cfg, onCheckpoint,
		[]kgo.Opt{kgo.SessionTimeout(rollingSessionTimeout), kgo.HeartbeatInterval(300 * time.Millisecond), kgo.RebalanceTimeout(10 * time.Second)})
}

// ownedKeyed returns the keyed partitions p owns now, sorted.
func ownedKeyed(p *pipeline.Pipeline) []int32 {
	return slices.Sorted(maps.Keys(p.Keyed().Partitions()))
}

// TestKafkaRollingRestartKeepsAssignmentsAndVerdicts: three pipelines
// (three fusebox processes) with static membership share the work while
// traffic is published at about 100 times real time; each in turn is shut
// down as SIGTERM does (drain, flush, checkpoint, commit) and started again
// at once with the same instance id, as a Kubernetes rolling update of a
// StatefulSet does, with kafka.leave_on_shutdown false. Each restarted
// process must get back exactly the keyed partitions it owned, the others'
// must not move, and together they must write exactly the verdicts and
// fuse commands of one uninterrupted process. The time from each shutdown
// to the restarted process's first verdict is measured and logged.
func TestKafkaRollingRestartKeepsAssignmentsAndVerdicts(t *testing.T) {
	t.Parallel()
	want := clusterReference(t)
	k := startTestCluster(t)
	cfg := parseClusterConfig(t, k.Brokers)
	col := startClusterCollector(t, k)
	cp := newClusterCheckpoints()
	total := len(want.verdicts)
	tl := newScaleTimeline(cp)

	paced := pacedSlices(t, 21*time.Second)
	publishSlices(t, k, paced[:1])
	published := publishPaced(t, k, paced[1:], 200*time.Millisecond)
	ids := []string{"fusebox-0", "fusebox-1", "fusebox-2"}
	// Which instance ids checkpointed each keyed partition: a partition
	// that moved, even for a moment, was checkpointed by another one (a
	// revoked partition is checkpointed as it goes).
	var ckMu sync.Mutex
	checkpointers := map[int32]map[string]bool{}
	onCheckpoint := func(id string, n int) func(int32, int64) {
		tlf := tl.onCheckpoint(n)
		return func(part int32, next int64) {
			ckMu.Lock()
			if checkpointers[part] == nil {
				checkpointers[part] = map[string]bool{}
			}
			checkpointers[part][id] = true
			ckMu.Unlock()
			tlf(part, next)
		}
	}
	procs := make([]*pipeline.Pipeline, len(ids))
	stops := make([]func() error, len(ids))
	for i, id := range ids {
		procs[i], stops[i] = startRollingMember(t, cfg, id, onCheckpoint(id, i+1))
	}
	// Every process owns keyed partitions, every partition is owned, and
	// the assignment has held for 3 s before the first restart; what was
	// checkpointed while the group formed does not count as a move.
	assignment := func() string {
		var b strings.Builder
		n := 0
		for _, p := range procs {
			own := ownedKeyed(p)
			if len(own) == 0 {
				return ""
			}
			n += len(own)
			fmt.Fprint(&b, own)
		}
		if n != int(cfg.Topics.KeyedPartitions) {
			return ""
		}
		return b.String()
	}
	stable, since := "", time.Now()
	if !testharness.Poll(90*time.Second, func() bool {
		if a := assignment(); a == "" || a != stable {
			stable, since = a, time.Now()
			return false
		}
		return time.Since(since) >= 3*time.Second
	}) {
		t.Fatalf("no stable assignment of the %d keyed partitions over the three processes after 90s (last %q):%s", cfg.Topics.KeyedPartitions, stable, tl.String())
	}
	ckMu.Lock()
	clear(checkpointers)
	ckMu.Unlock()

	var back []time.Duration
	for i, share := range []float64{0.2, 0.45, 0.7} {
		target := int(share * float64(total))
		if !testharness.Poll(90*time.Second, func() bool { return col.count() >= target }) {
			t.Fatalf("restart %d: %d distinct verdicts after 90s, waiting for %d:%s", i, col.count(), target, tl.String())
		}
		before := make([][]int32, len(procs))
		for j, p := range procs {
			before[j] = ownedKeyed(p)
		}
		tl.add(fmt.Sprintf("%s shuts down at %d of %d verdicts, owning %v", ids[i], col.count(), total, before[i]))
		down := time.Now()
		if err := stops[i](); err != nil {
			t.Fatalf("%s shutting down: %v", ids[i], err)
		}
		procs[i], stops[i] = startRollingMember(t, cfg, ids[i], onCheckpoint(ids[i], len(ids)+i+1))
		tl.add(ids[i] + " restarted")
		if !testharness.Poll(60*time.Second, func() bool { return procs[i].Keyed().Stats().Verdicts > 0 }) {
			t.Fatalf("%s: no verdict within 60s of its restart:%s", ids[i], tl.String())
		}
		back = append(back, time.Since(down))
		t.Logf("%s: shutdown to its first verdict after the restart %v", ids[i], back[i].Round(time.Millisecond))
		for j, p := range procs {
			if got := ownedKeyed(p); !slices.Equal(got, before[j]) {
				t.Errorf("after %s's restart %s owns keyed partitions %v, before %v: the assignment moved", ids[i], ids[j], got, before[j])
			}
		}
	}
	if err := <-published; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	if !testharness.Poll(90*time.Second, func() bool { n, _ := col.missing(want, 1<<62); return n == 0 }) {
		n, ex := col.missing(want, 1<<62)
		t.Fatalf("%d verdicts of the uninterrupted run still missing after 90s (e.g. %s):%s", n, ex, tl.String())
	}
	ends := cp.waitDrained(t, k, col, 60*time.Second)
	// Judged before the final stops: stopped one after another without
	// leaving, the last ones could see the first ones' partitions once
	// their session times out.
	ckMu.Lock()
	for part, by := range checkpointers {
		if len(by) != 1 {
			t.Errorf("keyed partition %d was checkpointed by %v: it moved during the rolling restart", part, slices.Sorted(maps.Keys(by)))
		}
	}
	clear(checkpointers)
	ckMu.Unlock()
	for i, stop := range stops {
		if err := stop(); err != nil {
			t.Fatalf("%s stopping: %v", ids[i], err)
		}
	}
	cp.requireCovers(t, ends)
	for i, p := range procs {
		if st := p.Keyed().Stats(); st.LateSpans != 0 || st.LateCorrections != 0 {
			t.Errorf("%s counted %d late spans and %d late corrections after its restart", ids[i], st.LateSpans, st.LateCorrections)
		}
	}
	got := readClusterOutput(t, k)
	compareClusterOutputs(t, "rolling restart", want, got)
	worst := slices.Max(back)
	t.Logf("rolling restart (%s): %d distinct verdicts from %d verdict records, %d fuse commands; shutdown to first verdict %v (worst %v)",
		k.Kind, len(got.verdicts), got.records, len(got.commands), back, worst.Round(time.Millisecond))
}
