package pipeline_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaScaleOutSameVerdictsAsOneProcess: two pipelines (two pipeline.New
// on the same SLO file: two fusebox processes in one consumer group per
// stage) share the partitions; a third joins and the first leaves while
// traffic keeps arriving. Together they write exactly the verdicts and
// fuse commands of one pipeline that consumed the same traffic alone,
// value for value. This is how a deployment grows past one machine: state
// moves with its keyed partition through the checkpoint on the state
// topic.
//
// The traffic is published as a live publisher would, at about 100 times
// real time (21 s of event time every 200 ms), its first slice before the
// processes start, so that no source partition is silent long enough to
// be marked idle before the end; the third
// process joins once 30% of the verdicts are out, the first leaves at 60%.
// (The reference consumed all of it at once: the verdicts do not depend on
// arrival timing either.)
func TestKafkaScaleOutSameVerdictsAsOneProcess(t *testing.T) {
	t.Parallel()
	want := clusterReference(t)
	k := startTestCluster(t)
	cfg := parseClusterConfig(t, k.Brokers)
	col := startClusterCollector(t, k)
	cp := newClusterCheckpoints()
	total := len(want.verdicts)
	tl := newScaleTimeline(cp)
	var procs []*pipeline.Pipeline
	// report is what a failure prints: the missing verdicts, the
	// timeline of the processes and of the keyed partitions' hand-offs,
	// the newest checkpoints, and what each process owns now.
	report := func() string {
		var b strings.Builder
		for _, m := range col.missingReport(want, 1<<62, 4, 20) {
			fmt.Fprintf(&b, "\n  missing %s", m)
		}
		b.WriteString(tl.String())
		fmt.Fprintf(&b, "\n  newest checkpoints (keyed partition: next offset): %v; keyed topic ends %v", cp.snapshot(), keyedEnds(t, k))
		for i, p := range procs {
			st := p.Keyed().Stats()
			fmt.Fprintf(&b, "\n  process %d owns %s; %d records, %d spans (%d late), %d corrections (%d late), %d verdicts",
				i+1, ownedWatermarks(p.Keyed().Partitions()), st.Records, st.Spans, st.LateSpans, st.Corrections, st.LateCorrections, st.Verdicts)
		}
		return b.String()
	}

	// The publisher is live before the processes start: the slices are
	// encoded (seconds on a loaded machine) and the first is published
	// first. Started on empty topics, the routers marked every source idle
	// after 2 s of silence and repeated the markers every 2 s; one landing
	// just after the first records made two span partitions idle while
	// the third ran 21 s of event time ahead, and their first spans late
	// (the one failure seen, under two CPU burners: engine's
	// TestSourcesIdleAtStartMissNoVerdict replays it).
	slices := pacedSlices(t, 21*time.Second)
	tl.add(fmt.Sprintf("%d slices encoded", len(slices)))
	publishSlices(t, k, slices[:1])
	tl.add("first slice published")
	// Paced publishing goes on while the processes start (pipeline.New
	// can take seconds under load): a pause of more than the 2 s idle
	// timeout after the first slice would bring the idle markers back.
	tl.add("paced publishing starts")
	published := publishPaced(t, k, slices[1:], 200*time.Millisecond)
	tl.add("process 1 starts")
	p1, stop1 := startClusterPipeline(t, cfg, tl.onCheckpoint(1))
	tl.add("process 2 starts")
	p2, stop2 := startClusterPipeline(t, cfg, tl.onCheckpoint(2))
	procs = append(procs, p1, p2)

	waitShare := func(name string, share float64) {
		t.Helper()
		target := int(share * float64(total))
		if !testharness.Poll(90*time.Second, func() bool { return col.count() >= target }) {
			t.Fatalf("%s: %d distinct verdicts after 90s, waiting for %d:%s", name, col.count(), target, report())
		}
		t.Logf("%s at %d of %d distinct verdicts", name, col.count(), total)
		tl.add(fmt.Sprintf("%s at %d of %d distinct verdicts", name, col.count(), total))
	}
	waitShare("a third process joins", 0.3)
	p3, stop3 := startClusterPipeline(t, cfg, tl.onCheckpoint(3))
	procs = append(procs, p3)
	waitShare("the first process leaves", 0.6)
	if err := stop1(); err != nil {
		t.Fatalf("first process stopping: %v", err)
	}
	tl.add("process 1 stopped")
	if err := <-published; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	tl.add("publishing done")
	if !testharness.Poll(90*time.Second, func() bool { n, _ := col.missing(want, 1<<62); return n == 0 }) {
		n, _ := col.missing(want, 1<<62)
		t.Fatalf("%d verdicts of the single process still missing after 90s:%s", n, report())
	}
	ends := cp.waitDrained(t, k, col, 60*time.Second)
	for i, stop := range []func() error{stop2, stop3} {
		if err := stop(); err != nil {
			t.Fatalf("process %d stopping: %v", i+2, err)
		}
	}
	cp.requireCovers(t, ends)
	// Stopped: reading the stats no longer races with the workers.
	for i, p := range []*pipeline.Pipeline{p1, p2, p3} {
		st := p.Keyed().Stats()
		if st.Spans == 0 {
			t.Errorf("process %d applied no span: it never owned a keyed partition", i+1)
		}
		if st.LateSpans != 0 || st.LateCorrections != 0 {
			t.Errorf("process %d counted %d late spans and %d late corrections: a source was marked idle mid-stream", i+1, st.LateSpans, st.LateCorrections)
		}
		t.Logf("process %d: %d keyed records, %d spans, %d corrections, %d verdicts", i+1, st.Records, st.Spans, st.Corrections, st.Verdicts)
	}
	got := readClusterOutput(t, k)
	compareClusterOutputs(t, "scaled out and in", want, got)
	t.Logf("scaled run: %d distinct verdicts from %d verdict records, %d fuse commands", len(got.verdicts), got.records, len(got.commands))
}

// pacedSlices cuts the cluster traffic into slices of step of event time,
// each the records of a producer with kgo.ManualPartitioner.
func pacedSlices(t *testing.T, step time.Duration) [][]*kgo.Record {
	t.Helper()
	src, err := clusterTraffic()
	if err != nil {
		t.Fatal(err)
	}
	var slices [][]*kgo.Record
	for from := time.Duration(0); replay.Start.Add(from).UnixNano() <= src.MaxEventTime(); from += step {
		slices = append(slices, clusterRecords(t, from, from+step))
	}
	return slices
}

// publishSlices publishes slices now, in order.
func publishSlices(t *testing.T, k *testharness.Kafka, slices [][]*kgo.Record) {
	t.Helper()
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	for _, recs := range slices {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// publishPaced publishes slices, one every every (wall time), from a
// goroutine; the channel gets nil when all is published, or the first
// error.
func publishPaced(t *testing.T, k *testharness.Kafka, slices [][]*kgo.Record, every time.Duration) <-chan error {
	t.Helper()
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for _, recs := range slices {
			<-tick.C
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := cl.ProduceSync(ctx, recs...).FirstErr()
			cancel()
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// scaleTimeline records, with the time since the test began, what the
// scale-out test did and every hand-off of a keyed partition as the
// checkpoints show it (the first checkpoint of a partition by a process
// other than the one that checkpointed it last), for the failure message.
type scaleTimeline struct {
	cp     *clusterCheckpoints
	start  time.Time
	mu     sync.Mutex
	events []string
	owner  map[int32]int // keyed partition: process that checkpointed it last
}

func newScaleTimeline(cp *clusterCheckpoints) *scaleTimeline {
	return &scaleTimeline{cp: cp, start: time.Now(), owner: map[int32]int{}}
}

func (tl *scaleTimeline) add(event string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, fmt.Sprintf("%6.2fs %s", time.Since(tl.start).Seconds(), event))
}

// onCheckpoint is process i's pipeline.Options.OnCheckpoint.
func (tl *scaleTimeline) onCheckpoint(i int) func(int32, int64) {
	return func(partition int32, next int64) {
		tl.cp.record(partition, next)
		tl.mu.Lock()
		prev, ok := tl.owner[partition]
		tl.owner[partition] = i
		tl.mu.Unlock()
		if !ok || prev != i {
			tl.add(fmt.Sprintf("keyed partition %d: checkpoint by process %d at next offset %d (last by process %d; 0: none)", partition, i, next, prev))
		}
	}
}

func (tl *scaleTimeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return "\n  timeline:\n    " + strings.Join(tl.events, "\n    ")
}

// ownedWatermarks formats Keyed.Partitions: each owned keyed partition
// with its watermark (offset from the traffic's start).
func ownedWatermarks(parts map[int32]int64) string {
	var b strings.Builder
	for p := int32(0); p < 16; p++ {
		wm, ok := parts[p]
		if !ok {
			continue
		}
		at := "unknown"
		if wm != math.MinInt64 {
			at = fmt.Sprintf("+%v", time.Duration(wm-replay.Start.UnixNano()))
		}
		fmt.Fprintf(&b, "[%d wm %s]", p, at)
	}
	if b.Len() == 0 {
		return "no keyed partition"
	}
	return b.String()
}
