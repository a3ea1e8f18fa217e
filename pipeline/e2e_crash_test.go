package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
)

// The child process of TestKafkaE2EKilledBeforeCommit reads these.
const (
	// envCrashConfig is the SLO file the child runs.
	envCrashConfig = "FUSEBOX_E2E_CRASH_CONFIG"
	// envCrashAfterSpans arms the crash once the keyed stage has applied
	// this many spans.
	envCrashAfterSpans = "FUSEBOX_E2E_CRASH_AFTER_SPANS"
	// crashLine starts the line the child prints just before it dies.
	crashLine = "e2e-child: SIGKILL"
	// crashCovered precedes, in the crash line, how many verdicts the
	// saved snapshots cover (then the count per partition).
	crashCovered = "verdicts covered by the saved snapshots"
)

// crashKgoOpts shorten the consumer-group session, so that the killed
// member is evicted in seconds rather than kgo's default 45 s and the
// restarted process gets the partitions at once.
var crashKgoOpts = []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond)}

// crashSink is the child's last sink. The engine's checkpoint flushes the
// sinks in order — ClickHouse, Kafka, then this one — before it saves the
// state snapshot and acknowledges the input; so when its Flush runs,
// everything written so far is durable in ClickHouse and Kafka and the
// checkpoint is not yet taken. Once armed, it kills the process there with
// SIGKILL, provided verdicts were written since the previous flush (by
// partitions that therefore have not checkpointed them) and the saved
// snapshot of some partition already covers verdicts of its own (so that
// the restart has verdicts to resume after, however slow the machine made
// the first checkpoints).
//
// Coverage is counted per partition, from the partition's own counters at
// its checkpoint: the sink is shared, so a checkpoint of one partition
// flushes what the others wrote without saving their state. (Counting
// every flushed verdict as checkpointed at the next checkpoint of any
// partition let the crash come when no snapshot covered a single verdict:
// on a loaded machine the workers catch up on a backlog, their watermarks
// and so their verdicts come in bursts between checkpoints, and keyed
// partition 0, which holds no key of the scenario, checkpoints the others'
// verdicts every 200 ms. The restart then rightly replayed every verdict.)
type crashSink struct {
	afterSpans int64
	keyed      atomic.Pointer[engine.Keyed]
	partitions int

	mu                 sync.Mutex
	checkpointed       map[int32]int
	verdictsSinceFlush int
	// covered is, per partition, how many verdicts its newest saved
	// snapshot holds (WorkerStats.Verdicts at its checkpoint).
	covered map[int32]int64
}

func (s *crashSink) Write(_ context.Context, out schemas.Output) error {
	s.mu.Lock()
	s.verdictsSinceFlush += len(out.Verdicts)
	s.mu.Unlock()
	return nil
}

// onCheckpoint runs on partition p's goroutine right after its snapshot
// was saved; no record is applied in between, so the partition's published
// counters are the snapshot's.
func (s *crashSink) onCheckpoint(p int32, _ int64) {
	k := s.keyed.Load()
	if k == nil {
		return
	}
	st, ok := k.PartitionStats()[p]
	s.mu.Lock()
	s.checkpointed[p]++
	if ok {
		s.covered[p] = st.Verdicts
	}
	s.mu.Unlock()
}

// coveredTotal sums covered (s.mu held).
func (s *crashSink) coveredTotal() int64 {
	var n int64
	for _, v := range s.covered {
		n += v
	}
	return n
}

func (s *crashSink) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keyed.Load()
	if k == nil {
		return nil
	}
	st := k.Stats()
	if st.Spans >= s.afterSpans && len(s.checkpointed) == s.partitions && s.verdictsSinceFlush > 0 && s.coveredTotal() > 0 {
		fmt.Printf("%s after %d spans applied, %d verdicts written since the last flush, checkpoints %v, %s %d %v\n",
			crashLine, st.Spans, s.verdictsSinceFlush, s.checkpointed, crashCovered, s.coveredTotal(), s.covered)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not deliverable late; wait for it
	}
	s.verdictsSinceFlush = 0
	return nil
}

func (s *crashSink) Close(context.Context) error { return nil }

// TestE2EKilledBeforeCommitChild is the child process of
// TestKafkaE2EKilledBeforeCommit: it runs the pipeline of the SLO file in
// $FUSEBOX_E2E_CRASH_CONFIG until its crash sink kills it. Run as a
// normal test (the variable unset) it has nothing to do and passes.
func TestE2EKilledBeforeCommitChild(t *testing.T) {
	path := os.Getenv(envCrashConfig)
	if path == "" {
		return
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	after, err := strconv.ParseInt(os.Getenv(envCrashAfterSpans), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", envCrashAfterSpans, err)
	}
	cs := &crashSink{afterSpans: after, partitions: int(cfg.Topics.KeyedPartitions), checkpointed: map[int32]int{}, covered: map[int32]int64{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.New(ctx, pipeline.Options{Config: cfg, InsecureUnsigned: true, ExtraSinks: []engine.Sink{cs},
		OnCheckpoint: cs.onCheckpoint, KgoOpts: crashKgoOpts, Logger: e2eLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cs.keyed.Store(p.Keyed())
	err = p.Run(ctx)
	t.Fatalf("the pipeline stopped without the crash (Run: %v); keyed stage %+v", err, p.Keyed().Stats())
}

// TestKafkaE2EKilledBeforeCommit kills the process running the pipeline (SIGKILL,
// in a child process) inside a checkpoint, right after every sink durably
// accepted the output and before the state snapshot is saved and the
// input committed — after earlier checkpoints of every partition. The
// process restarted on the same topics, group, state and database restores
// the checkpoints, replays what followed them, and rewrites verdicts that
// were already in ClickHouse. After FINAL each verdict is one row, and the
// verdict set equals an uninterrupted in-memory replay of the keyed topic;
// rollups are neither missing nor doubled.
func TestKafkaE2EKilledBeforeCommit(t *testing.T) {
	k := testharness.StartBroker(t)
	ch, db, conn := startMergelessDB(t)

	sc := e2eScenario(30, 1200*time.Second) // 36,000 calls over 20 minutes
	var total int64
	for _, ends := range spansPerKey(t, sc) {
		total += int64(len(ends))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	o := withClickHouse(e2eOpts{brokers: k.Brokers, group: "crash", checkpointEvery: 200 * time.Millisecond}, ch, db)
	path := filepath.Join(t.TempDir(), "fusebox.yaml")
	if err := os.WriteFile(path, []byte(e2eConfigYAML(o)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}

	// The source topics exist before the publisher and the child start:
	// left to the publisher's auto-creation racing the child's, a loaded
	// Apache broker answered UNKNOWN_TOPIC_OR_PARTITION past the producer's
	// retries, the publisher stopped, and the child never reached its crash.
	createSourceTopics(t, k, cfg)

	// The traffic arrives while the child runs (20 minutes of event time in
	// about 8 s), so that evaluations, sink writes and checkpoints
	// interleave as in production, and the crash (armed at 60% of the
	// spans) falls between two checkpoints of a running stream. The
	// publisher starts once the child's groups hold every partition: on a
	// loaded machine the child took longer than the 8 s to start, found the
	// whole traffic waiting as one backlog, caught up on it in a few large
	// batches and wrote nearly all its verdicts in one burst, so that no
	// flush came when a saved snapshot covered verdicts and more were
	// written after it (a run ended without the crash).
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestE2EKilledBeforeCommitChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashConfig+"="+path, envCrashAfterSpans+"="+strconv.FormatInt(total*6/10, 10))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := make(chan error, 1)
	go func() { childDone <- cmd.Wait() }()
	pubDone := make(chan int64, 1)
	if waitGroupsAssigned(t, k, cfg, childDone) {
		go func() { pubDone <- publishScenario(ctx, t, k, sc, 150).Spans }()
	}
	err = <-childDone
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL ||
		!strings.Contains(out.String(), crashLine) {
		t.Fatalf("the child did not die by its crash sink's SIGKILL (%v); its output:\n%s", err, out.String())
	}
	line := strings.TrimSpace(out.String()[strings.Index(out.String(), crashLine):])
	t.Logf("child: %s", line)
	var covered int64
	if i := strings.Index(line, crashCovered); i < 0 {
		t.Fatalf("the crash line lacks %q: %s", crashCovered, line)
	} else if _, err := fmt.Sscan(line[i+len(crashCovered):], &covered); err != nil || covered <= 0 {
		t.Fatalf("the crash line's covered verdicts (%d, %v): %s", covered, err, line)
	}
	time.Sleep(time.Second) // an insert the server was committing at the kill settles
	atCrash := chCount(t, conn, "SELECT count() FROM "+db+".verdicts")
	adm := kadm.NewClient(k.Client(t))
	commitAtCrash := committed(t, adm, cfg.Kafka.Group+".engine", cfg.Topics.Keyed)
	t.Logf("at the crash: %d verdict rows in ClickHouse, keyed offsets committed %v of %v", atCrash, commitAtCrash, k.EndOffsets(t, cfg.Topics.Keyed))
	if atCrash == 0 {
		t.Fatal("no verdict reached ClickHouse before the crash")
	}

	r := startRunWith(t, pipeline.Options{Config: cfg, InsecureUnsigned: true, KgoOpts: crashKgoOpts})
	if published := <-pubDone; published != total {
		t.Fatalf("published %d spans, the scenario has %d", published, total)
	}
	r.waitDrained(t, k, cfg, total, 2*time.Minute)
	r.stop(t)
	reinserted := uint64(metric(r.p.ClickHouse.Metrics(), "fusebox_sink_records_total", "table", clickhousesink.TableVerdicts))

	ref := referenceRun(t, cfg, readTopic(t, k, cfg.Topics.Keyed), r.checkpoints(), nil)
	refV := verdictIDs(t, ref.out.Verdicts, true, "in-memory replay")
	// The reference replays the keyed topic the crashed and the restarted
	// router wrote: it must hold every published span once, neither lost
	// nor duplicated by the router.
	if ref.stats.Spans+ref.stats.LateSpans != total {
		t.Fatalf("the replay applied %d spans + %d late, %d were published: the router lost or duplicated spans (replay stats %+v)",
			ref.stats.Spans, ref.stats.LateSpans, total, ref.stats)
	}
	st := r.p.Keyed().Stats()
	if st.Spans != ref.stats.Spans || st.LateSpans != ref.stats.LateSpans || st.Verdicts != ref.stats.Verdicts {
		t.Fatalf("restored pipeline stats %+v differ from the uninterrupted replay's %+v", st, ref.stats)
	}
	raw := chCount(t, conn, "SELECT count() FROM "+db+".verdicts")
	final := chCount(t, conn, "SELECT count() FROM "+db+".verdicts FINAL")
	uniq := chCount(t, conn, "SELECT uniqExact(id) FROM "+db+".verdicts")
	t.Logf("verdicts: %d rows before the crash + %d inserted after the restart = %d stored; %d after FINAL, %d ids; the replay has %d",
		atCrash, reinserted, raw, final, uniq, len(refV))
	if raw != atCrash+reinserted {
		t.Fatalf("%d rows stored, but %d were there at the crash and the restarted sink inserted %d", raw, atCrash, reinserted)
	}
	// The snapshots the child saved cover covered verdicts (a save in
	// flight at the kill may have landed too, covering more): a restart
	// that resumes from them does not produce those again.
	if reinserted+uint64(covered) > uint64(len(refV)) {
		t.Fatalf("the restarted run inserted %d verdicts of %d although the child's saved snapshots covered %d: it did not resume from the checkpoints",
			reinserted, len(refV), covered)
	}
	if raw <= uint64(len(refV)) {
		t.Fatalf("%d rows stored for %d verdicts: no verdict was replayed, the crash came after a commit", raw, len(refV))
	}
	if final != uniq || final != uint64(len(refV)) {
		t.Fatalf("after FINAL %d rows for %d ids, want %d", final, uniq, len(refV))
	}
	refCH := asCHVerdicts(refV)
	sameVerdicts(t, "ClickHouse FINAL", chVerdicts(t, conn, db), "uninterrupted replay", refCH)
	onKafka := kafkaVerdicts(t, k, cfg.Topics.Verdicts)
	sameIDs(t, cfg.Topics.Verdicts, verdictIDs(t, onKafka, false, ""), "uninterrupted replay", refV)
	sameVerdictMessages(t, cfg.Topics.Verdicts, onKafka, "uninterrupted replay", refCH)
	t.Logf("%s holds %d messages for %d verdicts", cfg.Topics.Verdicts, len(onKafka), len(refV))

	got, want := chRollups(t, conn, db), refRollups(t, ref.out.Rollups)
	sameIDs(t, "ClickHouse span_rollups", got, "replay rollups", want)
	for id, w := range want {
		if got[id] != w {
			t.Fatalf("rollup %s: ClickHouse %+v, replay %+v", id, got[id], w)
		}
	}
}

// createSourceTopics creates cfg's span and correction topics with the
// pipeline's default 6 partitions and waits until the broker serves every
// partition of them (Apache Kafka answers UNKNOWN_TOPIC_OR_PARTITION for a
// while after a create).
func createSourceTopics(t *testing.T, k *testharness.Kafka, cfg *config.File) {
	t.Helper()
	const partitions = 6
	topics := append(slices.Clone(cfg.Topics.Spans), cfg.Topics.Corrections...)
	for _, topic := range topics {
		k.CreateTopic(t, topic, partitions, nil)
	}
	adm := kadm.NewClient(k.Client(t))
	var served int
	var err error
	if !testharness.Poll(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var lo kadm.ListedOffsets
		lo, err = adm.ListEndOffsets(ctx, topics...)
		served = 0
		if err == nil {
			lo.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					served++
				}
			})
		}
		return served == partitions*len(topics)
	}) {
		t.Fatalf("the broker serves %d of the %d partitions of %v 30 s after creating them (%v)", served, partitions*len(topics), topics, err)
	}
}

// waitGroupsAssigned waits until the child's router group holds every
// partition of the span topics and its engine group every keyed partition,
// and reports true; false if the child exited first (childDone then holds
// its error again). It fails the test after a minute, the child's own limit.
func waitGroupsAssigned(t *testing.T, k *testharness.Kafka, cfg *config.File, childDone chan error) bool {
	t.Helper()
	adm := kadm.NewClient(k.Client(t))
	router, engineGroup := cfg.Kafka.Group+".router", cfg.Kafka.Group+".engine"
	want := map[string]map[string]int{
		router:      {},
		engineGroup: {cfg.Topics.Keyed: int(cfg.Topics.KeyedPartitions)},
	}
	for _, topic := range cfg.Topics.Spans {
		want[router][topic] = 6 // createSourceTopics
	}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-childDone:
			childDone <- err
			return false
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		groups, err := adm.DescribeGroups(ctx, router, engineGroup)
		cancel()
		ready := err == nil
		for g, topics := range want {
			d, ok := groups[g]
			if !ready || !ok || d.Err != nil || d.State != "Stable" {
				ready = false
				break
			}
			assigned := d.AssignedPartitions()
			for topic, n := range topics {
				if len(assigned[topic]) != n {
					ready = false
				}
			}
		}
		if ready {
			return true
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's groups %s and %s do not hold every partition after a minute (%v): %+v", router, engineGroup, err, groups)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
