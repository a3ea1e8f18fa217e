package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// TestApacheClusterLosesBrokers runs the pipeline on a 3-node Apache Kafka
// cluster (testharness.StartApacheCluster) with topics.replication_factor
// 3 and topics.min_insync_replicas 2, while the restart tests' traffic is
// published live, about 20 times real time (10 s of event time every
// 500 ms). While it flows: the broker leading the most keyed and fuse
// partitions is killed (kill -9) and restarted once the others have taken
// its partitions over; then every broker in turn is shut down the
// controlled way (SIGTERM) and restarted, each once the previous one has
// caught up (every replica in sync), as a rolling restart does.
//
// It checks that nothing is lost and nothing doubled: the verdict and fuse
// topics hold exactly the verdicts and commands of the uninterrupted run
// of the same input (clusterReference), id by id and byte for byte, no id
// with two values, no late span; that the topics fusebox created have 3
// replicas and min.insync.replicas 2; that /readyz (Pipeline.Ready) named
// the killed broker while it led fusebox's partitions unreachable, and was
// ready again after; and that the log says when the outage began and
// ended. It logs, per broker event, the longest time without a new verdict
// from the event until the next one (and before the first, for
// comparison): the figures of docs/running.md.
//
// Apache Kafka only (kfake has one broker and no replication): not a
// TestKafka... test; it runs in the go part of scripts/test, where
// FUSEBOX_REQUIRE_APACHE_KAFKA=1 makes a missing Java a failure.
func TestApacheClusterLosesBrokers(t *testing.T) {
	// Parallel: 150-195 s of mostly waiting (live pacing, elections); it
	// overlaps the package's other parallel tests instead of adding to the
	// go part's wall time.
	t.Parallel()
	// The uninterrupted run on kfake (the same verdicts as on Apache Kafka:
	// TestKafkaVerdictsOnApacheEqualKfake), not clusterReference: that
	// takes its broker from StartBroker, which only TestKafka... tests
	// may.
	want := runClusterReferenceOn(t, createClusterTopics(t, testharness.StartKafka(t, kfake.GroupMinSessionTimeout(500*time.Millisecond))))
	c := testharness.StartApacheCluster(t, 3, testharness.WithGroupMinSessionTimeout(500*time.Millisecond))
	k := c.Kafka
	src, err := clusterTraffic()
	if err != nil {
		t.Fatal(err)
	}
	isr := strconv.Itoa(testharness.ClusterMinISR)
	c.CreateTopic(t, replay.SpanTopic, int32(src.SpanPartitions()), 3, map[string]*string{"min.insync.replicas": &isr})
	c.CreateTopic(t, replay.CorrectionTopic, 1, 3, map[string]*string{"min.insync.replicas": &isr})
	cfg := replicatedClusterConfig(t, k.Brokers)
	ownTopics := []string{cfg.Topics.Keyed, cfg.Topics.State, cfg.Topics.DLQ, cfg.Topics.Verdicts, cfg.Topics.Fuse}
	allTopics := append(slices.Clone(ownTopics), replay.SpanTopic, replay.CorrectionTopic)

	col := startClusterCollector(t, k)
	arrivals := startArrivalClock(t, k, clusterVerdictTopic)
	cp := newClusterCheckpoints()
	logs := &logBuffer{}
	p, stop := startLoggedPipeline(t, cfg, cp.record, logs)
	ready := startReadySampler(p)
	t.Cleanup(func() {
		// A failure is read from the whole log and readiness record, not
		// their tails: they go to the artifacts directory.
		if !t.Failed() {
			return
		}
		path := filepath.Join(testharness.ArtifactsDir(t), "cluster-broker-loss.log")
		out := logs.String() + "\n--- readiness changes ---" + ready.String() + "\n"
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Errorf("write %s: %v", path, err)
			return
		}
		t.Logf("the pipeline's log and readiness record: %s", path)
	})

	// The topics fusebox created carry the SLO file's replication.
	adm := kadm.NewClient(k.Client(t))
	testharness.Eventually(t, 60*time.Second, "fusebox's topics", func() bool { return len(c.OutOfSync(t, ownTopics...)) == 0 })
	requireReplicated(t, adm, ownTopics, 3, isr)

	// Publishing: 10 s of event time per slice, one slice every 500 ms;
	// one every second (half the speed, silences of 1 s, half the idle
	// timeout) while the broker events still have to run and little
	// traffic is left, so that every event happens while traffic flows.
	traffic := pacedSlices(t, 10*time.Second)
	var eventsDone atomic.Bool
	published, pubEnd := publishWhileEvents(t, k, traffic, 500*time.Millisecond, &eventsDone)
	t0 := time.Now()
	testharness.Eventually(t, 90*time.Second, "the first verdicts", func() bool { return col.count() > 0 })
	// A steady state to compare the gaps with.
	events := []brokerEvent{{name: "steady state (no broker event)", at: time.Now()}}
	time.Sleep(8 * time.Second)
	// begin starts a broker event (kill or stop, then the restart); note
	// logs a step within it.
	begin := func(name string) {
		events = append(events, brokerEvent{name: name, at: time.Now()})
		t.Logf("%s %6.1fs %s", clock(time.Now()), time.Since(t0).Seconds(), name)
	}
	note := func(name string) { t.Logf("%s %6.1fs %s", clock(time.Now()), time.Since(t0).Seconds(), name) }

	// 1. kill -9 the leader of the keyed and fuse partitions.
	victim, led := mostLeading(t, c, cfg.Topics.Keyed, cfg.Topics.Fuse)
	begin(fmt.Sprintf("kill -9 of broker %d, leader of %s", victim, strings.Join(led, ", ")))
	c.Kill(t, victim)
	took := testharness.Eventually(t, 60*time.Second, "new leaders for the killed broker's partitions", func() bool {
		for _, topic := range allTopics {
			for _, l := range c.Leaders(t, topic) {
				if l == victim || l < 0 {
					return false
				}
			}
		}
		return true
	})
	note(fmt.Sprintf("every partition has a new leader after %v", took.Round(10*time.Millisecond)))
	time.Sleep(2 * time.Second) // run on two brokers for a while
	killedReason := ready.seen(fmt.Sprintf("broker %d (", victim))
	note(fmt.Sprintf("restart of broker %d", victim))
	c.Restart(t, victim)
	c.WaitInSync(t, 90*time.Second, allTopics...)
	note("every replica in sync")

	// 2. A controlled shutdown and restart of every broker in turn.
	for _, id := range c.NodeIDs() {
		begin(fmt.Sprintf("controlled shutdown of broker %d (leader of %d partitions)", id, len(leading(t, c, id, allTopics...))))
		c.Stop(t, id)
		time.Sleep(2 * time.Second)
		note(fmt.Sprintf("restart of broker %d", id))
		c.Restart(t, id)
		c.WaitInSync(t, 90*time.Second, allTopics...)
		note("every replica in sync")
	}
	eventsDone.Store(true)
	lastEvent := time.Now()
	note("broker events over")
	if err := <-published; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	if end := pubEnd(); end.Before(lastEvent) {
		t.Errorf("traffic ended %v before the last broker event was over: not every event happened while traffic flowed", lastEvent.Sub(end).Round(time.Millisecond))
	}
	note(fmt.Sprintf("%d slices published", len(traffic)))

	if !testharness.Poll(120*time.Second, func() bool {
		n, _ := col.missing(want, 1<<62)
		nc, _ := col.missingCommands(want)
		return n == 0 && nc == 0
	}) {
		n, ex := col.missing(want, 1<<62)
		nc, exc := col.missingCommands(want)
		t.Fatalf("%d verdicts (e.g. %s) and %d commands (e.g. %s) of the uninterrupted run missing after 120 s; readiness: %s\nlog tail:\n%s",
			n, ex, nc, exc, ready.String(), tailLog(logs, 30))
	}
	ends := cp.waitDrained(t, k, col, 60*time.Second)
	testharness.Eventually(t, 30*time.Second, "ready after the broker events", func() bool { return p.Ready() == nil })
	ready.stop()
	if err := stop(); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	cp.requireCovers(t, ends)
	if st := p.Keyed().Stats(); st.LateSpans != 0 || st.LateCorrections != 0 {
		t.Errorf("%d late spans and %d late corrections: a source was marked idle mid-stream", st.LateSpans, st.LateCorrections)
	}

	got := readClusterOutput(t, k)
	compareClusterOutputs(t, "3 brokers, one lost at a time", want, got)
	t.Logf("verdict topic: %d distinct verdicts in %d records (%d written twice, identical), %d fuse commands", len(got.verdicts), got.records, got.records-len(got.verdicts), len(got.commands))

	// /readyz and the log.
	if killedReason == "" {
		t.Errorf("/readyz never named broker %d while it was killed; it said: %s", victim, ready.String())
	} else {
		t.Logf("/readyz while broker %d was down: %s", victim, killedReason)
	}
	began, ended := logs.count("kafka outage: "), logs.count("kafka outage over")
	if began == 0 || ended == 0 || ended < began {
		t.Errorf("the log has %d outage starts and %d ends, want as many ends as starts and at least one:\n%s", began, ended, tailLog(logs, 30))
	}
	for _, l := range logs.lines() {
		if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "kafka outage") {
			t.Logf("log: %v %s reasons=%v lasted=%v", l["time"], msg, l["reasons"], l["lasted"])
		}
	}
	t.Logf("readiness changes: %s", ready.String())

	// The figures: the longest time without a new verdict in each event
	// (from its kill or stop to the next event's).
	events = append(events, brokerEvent{name: "end", at: lastEvent})
	for i := 0; i+1 < len(events); i++ {
		gap := arrivals.longestGap(events[i].at, events[i+1].at)
		t.Logf("time without verdicts: %-90s %v", events[i].name, gap.Round(10*time.Millisecond))
	}
}

// replicatedClusterConfig is clusterYAML with topics.replication_factor 3
// and topics.min_insync_replicas 2, and fusebox's default
// idle_source_timeout (10 s) instead of its 2 s.
//
// Why the idle timeout: when every source is silent for it, the router
// marks them idle and the watermark moves on by the silence (wall time),
// so a stall of the publisher longer than the idle timeout plus the
// allowed lateness (10 s) makes the records after it late. With 2 s, one
// run of six on a 2-core machine at load average 26 had 205 late spans
// and 16 late corrections (sources marked idle mid-stream around a
// broker's restart); production runs with 10 s too. The verdicts are the reference's (2 s) all the same:
// mid-stream no source is silent, and at the end the last windows close
// either way.
func replicatedClusterConfig(t *testing.T, brokers []string) *config.File {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(clusterYAML(t, brokers), &doc); err != nil {
		t.Fatal(err)
	}
	topics := doc["topics"].(map[string]any)
	topics["replication_factor"] = testharness.ClusterReplication
	topics["min_insync_replicas"] = testharness.ClusterMinISR
	doc["time"].(map[string]any)["idle_source_timeout"] = "10s"
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse("cluster.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// startLoggedPipeline is startPipelineWith (the cluster's group options)
// logging JSON lines into logs.
func startLoggedPipeline(t *testing.T, cfg *config.File, onCheckpoint func(int32, int64), logs *logBuffer) (*pipeline.Pipeline, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := pipeline.New(ctx, pipeline.Options{Config: cfg, Logger: logs.logger(), KgoOpts: append(clusterGroupOpts(), testharness.ClusterClientOpts()...),
		OnCheckpoint: onCheckpoint})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return p, runStoppable(t, ctx, cancel, p)
}

// requireReplicated fails unless every partition of topics has rf
// replicas and each topic min.insync.replicas isr.
func requireReplicated(t *testing.T, adm *kadm.Client, topics []string, rf int, isr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		for _, p := range td[topic].Partitions {
			if len(p.Replicas) != rf {
				t.Errorf("%s[%d] has %d replicas, want %d (topics.replication_factor)", topic, p.Partition, len(p.Replicas), rf)
			}
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		for _, cf := range rc.Configs {
			if cf.Key == "min.insync.replicas" && cf.MaybeValue() != isr {
				t.Errorf("%s has min.insync.replicas %s, want %s (topics.min_insync_replicas)", rc.Name, cf.MaybeValue(), isr)
			}
		}
	}
}

// mostLeading returns the node leading the most partitions of topics, and
// those partitions.
func mostLeading(t *testing.T, c *testharness.ApacheCluster, topics ...string) (int32, []string) {
	t.Helper()
	var best int32
	var bestLed []string
	for _, id := range c.NodeIDs() {
		if led := leading(t, c, id, topics...); len(led) > len(bestLed) {
			best, bestLed = id, led
		}
	}
	return best, bestLed
}

// leading lists the partitions of topics node id leads.
func leading(t *testing.T, c *testharness.ApacheCluster, id int32, topics ...string) []string {
	t.Helper()
	var out []string
	for _, topic := range topics {
		leaders := c.Leaders(t, topic)
		for part := int32(0); part < int32(len(leaders)); part++ {
			if leaders[part] == id {
				out = append(out, fmt.Sprintf("%s[%d]", topic, part))
			}
		}
	}
	return out
}

// brokerEvent is one thing the test did to the cluster, and when.
type brokerEvent struct {
	name string
	at   time.Time
}

// arrivalClock records when each record of a topic arrived (the wall
// time its fetch returned).
type arrivalClock struct {
	mu    sync.Mutex
	times []time.Time
}

func startArrivalClock(t *testing.T, k *testharness.Kafka, topic string) *arrivalClock {
	t.Helper()
	cl := k.Client(t, append(testharness.ClusterClientOpts(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	a := &arrivalClock{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if n := fs.NumRecords(); n > 0 {
				now := time.Now()
				a.mu.Lock()
				a.times = append(a.times, now)
				a.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return a
}

// longestGap is the longest time between two consecutive verdict
// arrivals of which the later one is in (from, to]: a gap belongs to the
// event in which verdicts resumed. When none arrived in (from, to], it is
// the time from the last arrival before (or from) to to.
func (a *arrivalClock) longestGap(from, to time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var longest time.Duration
	prev, any := from, false
	for _, at := range a.times {
		if at.After(from) && !at.After(to) {
			longest, any = max(longest, at.Sub(prev)), true
		}
		if !at.After(to) {
			prev = at
		}
	}
	if !any {
		return to.Sub(prev)
	}
	return longest
}

// clock is the wall time of the test's log lines (UTC, as the
// pipeline's log), so that they can be read beside it.
func clock(at time.Time) string { return at.UTC().Format("15:04:05.0") }

// readySampler polls Pipeline.Ready every 100 ms and keeps every change.
type readySampler struct {
	mu      sync.Mutex
	changes []string
	reasons []string
	halt    chan struct{}
	done    chan struct{}
}

func startReadySampler(p *pipeline.Pipeline) *readySampler {
	r := &readySampler{halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		last := "\x00"
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.halt:
				return
			case <-tick.C:
			}
			now := "ready"
			if err := p.Ready(); err != nil {
				now = err.Error()
			}
			r.mu.Lock()
			if now != "ready" {
				r.reasons = append(r.reasons, now)
			}
			// The outage's duration in the reason changes every second:
			// record a change of what it names only.
			if key := strings.Join(strings.Fields(stripDurations(now)), " "); key != last {
				last = key
				r.changes = append(r.changes, clock(time.Now())+" "+now)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *readySampler) stop() {
	select {
	case <-r.halt:
	default:
		close(r.halt)
	}
	<-r.done
}

// seen returns the first not-ready reason containing s, "" if none.
func (r *readySampler) seen(s string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, why := range r.reasons {
		if strings.Contains(why, s) {
			return why
		}
	}
	return ""
}

func (r *readySampler) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "\n  " + strings.Join(r.changes, "\n  ")
}

// stripDurations drops "for 3s:"-like durations from a reason.
func stripDurations(s string) string {
	var b strings.Builder
	for _, w := range strings.Fields(s) {
		if _, err := time.ParseDuration(strings.TrimSuffix(w, ":")); err == nil {
			continue
		}
		b.WriteString(w + " ")
	}
	return b.String()
}

// tailLog is the last n lines of logs.
func tailLog(logs *logBuffer, n int) string {
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// publishWhileEvents publishes slices from a goroutine, one every tick
// (wall time), or one every second tick once fewer than 40 are left while
// done is not set yet (the test's broker events are not over); the channel
// gets nil when all is published, or the first error, and end returns
// when the last slice was published.
func publishWhileEvents(t *testing.T, k *testharness.Kafka, slices [][]*kgo.Record, every time.Duration, done *atomic.Bool) (<-chan error, func() time.Time) {
	t.Helper()
	cl := k.Client(t, append(testharness.ClusterClientOpts(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))...)
	out := make(chan error, 1)
	var mu sync.Mutex
	var last time.Time
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i, n := 0, 0; i < len(slices); n++ {
			<-tick.C
			if len(slices)-i < 40 && !done.Load() && n%2 == 1 {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			err := cl.ProduceSync(ctx, slices[i]...).FirstErr()
			cancel()
			if err != nil {
				out <- fmt.Errorf("slice %d: %w", i, err)
				return
			}
			i++
		}
		mu.Lock()
		last = time.Now()
		mu.Unlock()
		out <- nil
	}()
	return out, func() time.Time { mu.Lock(); defer mu.Unlock(); return last }
}
