package pipeline_test

// Shared machinery of the end-to-end tests (e2e_*_test.go) and benchmarks
// (bench_*_test.go): an SLO file with both sinks, publishing generated
// traffic as a team would, and running the pipeline until it has drained
// its input. e2e_readback_test.go reads back what it wrote.

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/gen"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

// e2eStart is the event time of the first generated call.
var e2eStart = time.Unix(1_800_000_000, 0)

// e2eSLOs exercises four processors and the breaker: the burn rate pages on
// the error burst (and trips the target), the tail estimate breaches on the
// latency blow-up, drift compares canaries with baselines, corrections
// joins the correction events.
const e2eSLOs = `
slos:
  - name: availability
    burnrate: {min_events: 50}
  - name: latency
    tail: {budget: 6000, window: 5m}
  - name: canary-confidence
    drift: {metric: confidence, mode: canary, window: 5m, every: 1m}
  - name: corrections
    corrections: {max_rate: 0.05, window: 10m, join_window: 10m}
`

// e2eOpts are the parts of the SLO file a test varies.
type e2eOpts struct {
	brokers []string
	// group prefixes the consumer groups; suffix names the keyed, state,
	// verdict and fuse topics ("fusebox.keyed"+suffix, ...), so that one
	// broker can hold several independent runs.
	group, suffix string
	// stateSuffix, when set, names the state topic instead of suffix (a
	// fresh state over the same keyed topic).
	stateSuffix string
	// chAddr and chDB turn the ClickHouse sink on.
	chAddr, chDB         string
	chUser, chPassword   string
	chBatch, chBuffer    int
	noKafkaSink          bool // set after parsing: the file must name a sink
	checkpointEvery      time.Duration
	idleSourceTimeout    time.Duration
	keyedPartitions      int
	clickhouseFlushEvery time.Duration
}

// e2eConfigYAML renders the SLO file. The version is pinned: by default it
// is a hash of the whole file, and runs that differ only in group or topic
// names must give the same verdict ids.
func e2eConfigYAML(o e2eOpts) string {
	if o.checkpointEvery == 0 {
		o.checkpointEvery = 500 * time.Millisecond
	}
	if o.idleSourceTimeout == 0 {
		o.idleSourceTimeout = time.Second
	}
	if o.keyedPartitions == 0 {
		o.keyedPartitions = 4
	}
	if o.clickhouseFlushEvery == 0 {
		o.clickhouseFlushEvery = 200 * time.Millisecond
	}
	state := o.suffix
	if o.stateSuffix != "" {
		state = o.stateSuffix
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version: e2e-v1\n")
	fmt.Fprintf(&b, "kafka: {brokers: [%s], group: %s}\n", strings.Join(o.brokers, ", "), o.group)
	fmt.Fprintf(&b, "time: {idle_source_timeout: %s, checkpoint_every: %s, allowed_lateness: 5s}\n", o.idleSourceTimeout, o.checkpointEvery)
	fmt.Fprintf(&b, "topics: {keyed_partitions: %d, keyed: fusebox.keyed%s, state: fusebox.state%s, verdicts: fusebox.verdicts%s, fuse: fusebox.fuse%s}\n",
		o.keyedPartitions, o.suffix, state, o.suffix, o.suffix)
	fmt.Fprintf(&b, "signing: {insecure_unsigned: true}\n")
	fmt.Fprintf(&b, "sinks:\n  kafka: {enabled: true, partitions: 3}\n")
	if o.chAddr != "" {
		if o.chBatch == 0 {
			o.chBatch = 2000
		}
		if o.chBuffer == 0 {
			o.chBuffer = 20000
		}
		if o.chUser == "" {
			o.chUser = "default"
		}
		fmt.Fprintf(&b, "  clickhouse: {addr: [%s], database: %s, username: %q, password: %q, batch_rows: %d, buffer_rows: %d, flush_every: %s, dial_timeout: 1s}\n",
			o.chAddr, o.chDB, o.chUser, o.chPassword, o.chBatch, o.chBuffer, o.clickhouseFlushEvery)
	}
	b.WriteString(e2eSLOs)
	return b.String()
}

func e2eConfig(t testing.TB, o e2eOpts) *config.File {
	t.Helper()
	f, err := config.Parse("e2e.yaml", []byte(e2eConfigYAML(o)))
	if err != nil {
		t.Fatal(err)
	}
	// The file must name a sink; a benchmark's baseline has none but the
	// discarding sink it passes as an extra one.
	f.Sinks.Kafka.Enabled = !o.noKafkaSink
	return f
}

// e2eScenario is the demo's 36 keys (3 tenants x 2 services x 3 models x
// canary/baseline) at rate calls per second of event time for d, with
// three incidents: an error burst (burn-rate page, breaker trip), a latency
// tail blow-up (tail breach) and a canary confidence drift.
func e2eScenario(rate float64, d time.Duration) traffic.Scenario {
	sc := traffic.Demo()
	sc.Rate = rate
	sc.Duration = d
	frac := func(x float64) time.Duration { return time.Duration(x * float64(d)) }
	sc.Incidents = []traffic.Incident{
		{Name: "errors", Kind: traffic.ErrorBurst, Start: frac(0.2), End: frac(0.45),
			Target: traffic.Target{Tenant: "acme", Service: "chat"}, Magnitude: 0.5},
		{Name: "tail", Kind: traffic.TailBlowup, Start: frac(0.5), End: frac(0.8),
			Target: traffic.Target{Tenant: "globex", Service: "chat", Model: "gpt-4o-mini"}, Magnitude: 0.05},
		{Name: "canary", Kind: traffic.CanaryDrift, Start: frac(0.3), End: frac(0.9),
			Target: traffic.Target{Tenant: "initech", Service: "search", Model: "claude-3-5-haiku", Variant: "canary"}, Magnitude: 0.2},
	}
	return sc
}

// publishScenario publishes sc through internal/sim/gen as fast as the broker
// takes it (speedup 0) or paced, and returns what the broker acknowledged.
func publishScenario(ctx context.Context, t testing.TB, k *testharness.Kafka, sc traffic.Scenario, speedup float64) gen.Summary {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Error(err)
		return gen.Summary{}
	}
	defer cl.Close()
	sum, err := gen.Run(ctx, gen.Config{Scenario: sc, Start: e2eStart, Speedup: speedup}, cl)
	if err != nil {
		t.Errorf("publish: %v", err)
	}
	return sum
}

// spansPerKey regenerates sc exactly as gen.Run steps it and returns the
// end times (Unix ns) of the LLM spans of every key.
func spansPerKey(t testing.TB, sc traffic.Scenario) map[schemas.Key][]int64 {
	t.Helper()
	g, err := traffic.New(sc, e2eStart)
	if err != nil {
		t.Fatal(err)
	}
	out := map[schemas.Key][]int64{}
	for !g.Done() {
		step := min(gen.DefaultStep, sc.Duration-g.Offset())
		for _, s := range g.Next(step).Spans {
			out[s.Key] = append(out[s.Key], s.EndUnixNano)
		}
	}
	return out
}

// e2eLogger logs to stderr when FUSEBOX_TEST_LOG is set (as testLogger,
// for benchmarks too).
func e2eLogger() *slog.Logger {
	if os.Getenv("FUSEBOX_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// e2eRun is one pipeline running in this process.
type e2eRun struct {
	p      *pipeline.Pipeline
	cancel context.CancelFunc
	done   chan error
	start  time.Time

	mu sync.Mutex
	// ckpt is the keyed offset the last checkpoint of each partition
	// covers; lastCkpt is when the last one completed.
	ckpt     map[int32]int64
	lastCkpt time.Time
}

// startRun builds the pipeline for cfg and runs it until stop.
func startRun(t testing.TB, cfg *config.File, signer engine.Signer, extra ...engine.Sink) *e2eRun {
	t.Helper()
	return startRunWith(t, pipeline.Options{Config: cfg, Signer: signer, InsecureUnsigned: signer == nil, ExtraSinks: extra})
}

// startRunWith is startRun with more options; OnCheckpoint and a nil
// Logger are filled in.
func startRunWith(t testing.TB, o pipeline.Options) *e2eRun {
	t.Helper()
	r := &e2eRun{ckpt: map[int32]int64{}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	if o.Logger == nil {
		o.Logger = e2eLogger()
	}
	o.OnCheckpoint = func(partition int32, next int64) {
		r.mu.Lock()
		r.ckpt[partition] = next
		r.lastCkpt = time.Now()
		r.mu.Unlock()
	}
	p, err := pipeline.New(ctx, o)
	if err != nil {
		cancel()
		t.Fatalf("pipeline.New: %v", err)
	}
	r.p = p
	r.start = time.Now()
	go func() { r.done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
		}
	})
	return r
}

// stop shuts the pipeline down (the final checkpoint flushes every sink)
// and fails the test if Run failed.
func (r *e2eRun) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("pipeline Run: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("pipeline did not stop within 90s")
	}
}

// checkpoints returns the keyed offset each partition's last checkpoint
// covers.
func (r *e2eRun) checkpoints() map[int32]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.ckpt)
}

// waitDrained waits until the keyed stage has applied every one of the
// wantSpans published LLM spans and every record of the keyed topic, and
// its evaluations have stopped moving for longer than the router's idle
// timeout: the idle markers that close the last windows are in and
// applied. (The router repeats its idle markers while the sources stay
// silent, so the keyed topic itself keeps growing.) It fails the test
// after timeout, saying where the pipeline is.
func (r *e2eRun) waitDrained(t testing.TB, k *testharness.Kafka, cfg *config.File, wantSpans int64, timeout time.Duration) {
	t.Helper()
	// The router checks for silence every IdleSourceTimeout/4, so its idle
	// markers follow the last data by at most 1.25 timeouts.
	stable := cfg.Time.IdleSourceTimeout*3/2 + 500*time.Millisecond
	deadline := time.Now().Add(timeout)
	var lastEval int64 = -1
	var since time.Time
	for {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("pipeline stopped while draining: %v", err)
		default:
		}
		st := r.p.Keyed().Stats()
		ends := k.EndOffsets(t, cfg.Topics.Keyed)
		var sum int64
		for _, o := range ends {
			sum += o
		}
		if st.Evaluations != lastEval {
			lastEval, since = st.Evaluations, time.Now()
		}
		// Keyed records of another deployment (a run under another group
		// on the same keyed topic) are consumed and skipped.
		foreign, _ := r.p.ForeignRecords()
		if st.Spans+st.LateSpans == wantSpans && st.Records+foreign == sum && time.Since(since) >= stable {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained after %v: keyed stage applied %d of %d spans, %d (+%d of other deployments) of %d keyed records; router %+v",
				timeout, st.Spans+st.LateSpans, wantSpans, st.Records, foreign, sum, r.p.Source().Stats())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// committed returns the group's committed offsets of topic (absent
// partitions have none).
func committed(t testing.TB, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	for p, o := range os[topic] {
		if o.Err == nil {
			out[p] = o.At
		}
	}
	return out
}
