package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/enginebench"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestScaleOutSameVerdictsAsOneProcess: two pipelines (two pipeline.New
// on the same SLO file: two fusebox processes in one consumer group per
// stage) share the partitions; a third joins and the first leaves while
// traffic keeps arriving. Together they write exactly the verdicts and
// fuse commands of one pipeline that consumed the same traffic alone,
// value for value. This is how a deployment grows past one machine: state
// moves with its keyed partition through the checkpoint on the state
// topic.
//
// The traffic is published as a live publisher would, at about 100 times
// real time (21 s of event time every 200 ms), so that no source partition
// is silent long enough to be marked idle before the end; the third
// process joins once 30% of the verdicts are out, the first leaves at 60%.
// (The reference consumed all of it at once: the verdicts do not depend on
// arrival timing either.)
func TestScaleOutSameVerdictsAsOneProcess(t *testing.T) {
	t.Parallel()
	want := clusterReference(t)
	k := startTestCluster(t)
	cfg := parseClusterConfig(t, k.Brokers)
	col := startClusterCollector(t, k)
	cp := newClusterCheckpoints()
	total := len(want.verdicts)

	p1, stop1 := startClusterPipeline(t, cfg, cp.record)
	p2, stop2 := startClusterPipeline(t, cfg, cp.record)
	published := publishPaced(t, k, 21*time.Second, 200*time.Millisecond)

	waitShare := func(name string, share float64) {
		t.Helper()
		target := int(share * float64(total))
		if !clusterWait(90*time.Second, func() bool { return col.count() >= target }) {
			t.Fatalf("%s: %d distinct verdicts after 90s, waiting for %d", name, col.count(), target)
		}
		t.Logf("%s at %d of %d distinct verdicts", name, col.count(), total)
	}
	waitShare("a third process joins", 0.3)
	p3, stop3 := startClusterPipeline(t, cfg, cp.record)
	waitShare("the first process leaves", 0.6)
	if err := stop1(); err != nil {
		t.Fatalf("first process stopping: %v", err)
	}
	if err := <-published; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	if !clusterWait(90*time.Second, func() bool { n, _ := col.missing(want, 1<<62); return n == 0 }) {
		n, example := col.missing(want, 1<<62)
		t.Fatalf("%d verdicts of the single process still missing after 90s (e.g. %s)", n, example)
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

// publishPaced publishes the cluster traffic in slices of step of event
// time, one slice every every (wall time), from a goroutine; the channel
// gets nil when all is published, or the first error.
func publishPaced(t *testing.T, k *testharness.Kafka, step, every time.Duration) <-chan error {
	t.Helper()
	src, err := clusterTraffic()
	if err != nil {
		t.Fatal(err)
	}
	var slices [][]*kgo.Record
	for from := time.Duration(0); enginebench.Start.Add(from).UnixNano() <= src.MaxEventTime(); from += step {
		slices = append(slices, clusterRecords(t, from, from+step))
	}
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for _, recs := range slices {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := cl.ProduceSync(ctx, recs...).FirstErr()
			cancel()
			if err != nil {
				done <- err
				return
			}
			<-tick.C
		}
		done <- nil
	}()
	return done
}
