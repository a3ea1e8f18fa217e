package pipeline_test

// Machinery of the live-paced tests (live_*_test.go): valid traffic
// published over wall-clock time by a goroutine, with event times at the
// wall clock, into every source partition, while a test feeds its bad
// case; a sink that remembers every verdict; waits on the verdicts of the
// healthy tenants. Windows, evaluation intervals, allowed lateness and idle
// timeouts are scaled down (1s evaluations, 1s lateness, 1s idle timeout)
// so each test takes tens of seconds.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// liveSourcePartitions is the partition count of the live tests' span
// topic (created by the pipeline).
const liveSourcePartitions = 6

// liveOpts vary the live tests' SLO file.
type liveOpts struct {
	brokers []string
	suffix  string // names the group and internal topics
	extra   string // more YAML (top-level sections)
	idle    time.Duration
	keyed   int
	// sinks is more YAML under sinks: (indented two spaces).
	sinks string
	// instance is kafka.instance_id.
	instance string
}

// liveConfig is a tail SLO (window 4s, evaluated every 1s, a verdict per
// key with data: ok for this traffic) with allowed lateness 1s.
func liveConfig(t testing.TB, o liveOpts) *config.File {
	t.Helper()
	f, err := config.Parse("live.yaml", []byte(liveYAML(o)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// liveYAML is liveConfig's file.
func liveYAML(o liveOpts) string {
	if o.idle == 0 {
		o.idle = time.Second
	}
	if o.keyed == 0 {
		o.keyed = 2
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version: live-v1\n")
	fmt.Fprintf(&b, "kafka: {brokers: [%s], group: live%s, instance_id: %q}\n", strings.Join(o.brokers, ", "), o.suffix, o.instance)
	fmt.Fprintf(&b, "time: {idle_source_timeout: %s, checkpoint_every: 500ms, allowed_lateness: 1s}\n", o.idle)
	fmt.Fprintf(&b, "topics: {keyed_partitions: %d, keyed: fusebox.keyed%s, state: fusebox.state%s, verdicts: fusebox.verdicts%s, fuse: fusebox.fuse%s, dlq: fusebox.dlq%s}\n",
		o.keyed, o.suffix, o.suffix, o.suffix, o.suffix, o.suffix)
	b.WriteString("signing: {insecure_unsigned: true}\nrollups: {enabled: false}\nsinks:\n  kafka: {enabled: true, partitions: 1}\n")
	b.WriteString(o.sinks)
	b.WriteString(o.extra)
	b.WriteString("slos:\n  - name: latency\n    tail: {budget: 100000, window: 4s, every: 1s, min_samples: 5}\n")
	return b.String()
}

// verdictLog is an engine.Sink that keeps every verdict.
type verdictLog struct {
	mu       sync.Mutex
	verdicts []schemas.Verdict
	fail     atomic.Bool // Write fails while set (a failing sink)
}

func (v *verdictLog) Write(_ context.Context, out schemas.Output) error {
	if v.fail.Load() {
		return fmt.Errorf("verdictLog: failing on purpose")
	}
	v.mu.Lock()
	v.verdicts = append(v.verdicts, out.Verdicts...)
	v.mu.Unlock()
	return nil
}
func (v *verdictLog) Flush(context.Context) error {
	if v.fail.Load() {
		return fmt.Errorf("verdictLog: failing on purpose")
	}
	return nil
}
func (v *verdictLog) Close(context.Context) error { return nil }

// newest returns the latest window end (Unix ns) of tenant's verdicts, 0
// when none; judged counts only verdicts that judged data (not
// insufficient_data).
func (v *verdictLog) newest(tenant string, judged bool) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	var n int64
	for _, x := range v.verdicts {
		if judged && x.Status == schemas.StatusInsufficientData {
			continue
		}
		if x.Key.Tenant == tenant && x.WindowEndUnixNano > n {
			n = x.WindowEndUnixNano
		}
	}
	return n
}

// waitVerdicts waits until every tenant has a verdict that judged data
// (status ok, warn or breach) for a window ending at or after since, and
// returns when the last of them came; it fails the test after timeout.
func (v *verdictLog) waitVerdicts(t testing.TB, since time.Time, timeout time.Duration, tenants ...string) time.Time {
	t.Helper()
	return v.wait(t, true, since, timeout, tenants...)
}

// waitAnyVerdict is waitVerdicts counting insufficient_data verdicts too.
func (v *verdictLog) waitAnyVerdict(t testing.TB, since time.Time, timeout time.Duration, tenants ...string) time.Time {
	t.Helper()
	return v.wait(t, false, since, timeout, tenants...)
}

func (v *verdictLog) wait(t testing.TB, judged bool, since time.Time, timeout time.Duration, tenants ...string) time.Time {
	t.Helper()
	var missing []string
	if !testharness.Poll(timeout, func() bool {
		missing = missing[:0]
		for _, tn := range tenants {
			if v.newest(tn, judged) < since.UnixNano() {
				missing = append(missing, tn)
			}
		}
		return len(missing) == 0
	}) {
		t.Fatalf("no verdict with a window ending after %s for %v within %v (newest per tenant: %v)",
			since.Format(time.RFC3339Nano), missing, timeout, v.newestAll(tenants))
	}
	return time.Now()
}

func (v *verdictLog) newestAll(tenants []string) map[string]string {
	out := map[string]string{}
	for _, tn := range tenants {
		if n := v.newest(tn, false); n > 0 {
			out[tn] = time.Unix(0, n).UTC().Format(time.RFC3339Nano)
		} else {
			out[tn] = "none"
		}
	}
	return out
}

// livePublisher publishes valid traffic for its tenants every tick, one
// OTLP message per source partition it covers, event time = wall clock.
type livePublisher struct {
	cl      *kgo.Client
	topic   string
	tenants []string
	// parts are the source partitions written; models the models per
	// tenant (default one, "gpt-4o").
	parts  []int32
	models []string
	perMsg int
	tick   time.Duration
	// clock gives the event time of each tick's spans (default time.Now).
	clock func() time.Time

	stop chan struct{}
	done chan struct{}
	seq  atomic.Uint64
	sent atomic.Int64
	errs atomic.Int64
}

// startPublisher starts publishing on every source partition (or those
// given) until the test ends or stop is called.
func startPublisher(t testing.TB, k *testharness.Kafka, tenants []string, parts ...int32) *livePublisher {
	t.Helper()
	return startPublisherClock(t, k, tenants, time.Now, parts...)
}

// startPublisherClock is startPublisher with the event times clock gives.
func startPublisherClock(t testing.TB, k *testharness.Kafka, tenants []string, clock func() time.Time, parts ...int32) *livePublisher {
	t.Helper()
	if len(parts) == 0 {
		for p := int32(0); p < liveSourcePartitions; p++ {
			parts = append(parts, p)
		}
	}
	p := &livePublisher{
		cl:    k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(2*time.Millisecond)),
		topic: "otlp_spans", tenants: tenants, parts: parts, models: []string{"gpt-4o"}, perMsg: 4, tick: 100 * time.Millisecond,
		stop: make(chan struct{}), done: make(chan struct{}), clock: clock,
	}
	go p.run()
	t.Cleanup(p.halt)
	return p
}

func (p *livePublisher) halt() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *livePublisher) run() {
	defer close(p.done)
	tk := time.NewTicker(p.tick)
	defer tk.Stop()
	names := schemas.DefaultAttributeNames()
	for {
		select {
		case <-p.stop:
			return
		case <-tk.C:
		}
		now := p.clock()
		for _, part := range p.parts {
			var spans []schemas.Span
			for _, tn := range p.tenants {
				for _, m := range p.models {
					for i := 0; i < p.perMsg; i++ {
						spans = append(spans, liveSpan(p.seq.Add(1), tn, m, now))
					}
				}
			}
			rec := &kgo.Record{Topic: p.topic, Partition: part, Value: schemas.EncodeOTLPProto(nil, spans, names)}
			n := int64(len(spans))
			p.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
				if err != nil {
					p.errs.Add(1)
					return
				}
				p.sent.Add(n)
			})
		}
	}
}

// liveSpan is a valid LLM span of tenant on model ending at end.
func liveSpan(seq uint64, tenant, model string, end time.Time) schemas.Span {
	var s schemas.Span
	for i := 0; i < 8; i++ {
		s.TraceID[i] = byte(seq >> (8 * i))
		s.SpanID[i] = byte(seq >> (8 * i))
	}
	s.TraceID[15] = 1
	dur := 200 + float64(seq%97)
	s.EndUnixNano = end.UnixNano()
	s.StartUnixNano = s.EndUnixNano - int64(dur*1e6)
	s.DurationMs = dur
	s.Key = schemas.Key{Tenant: tenant, Service: "chat", Model: model, Variant: "baseline"}
	s.Operation = "chat"
	return s
}

// logBuffer is a slog handler target keeping every line, for tests that
// assert what is logged.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logger logs JSON lines into l (and to stderr with FUSEBOX_TEST_LOG).
func (l *logBuffer) logger() *slog.Logger {
	var w io.Writer = l
	if os.Getenv("FUSEBOX_TEST_LOG") != "" {
		w = io.MultiWriter(l, os.Stderr)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// lines returns the lines that are JSON objects, decoded.
func (l *logBuffer) lines() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// count returns how many lines hold every one of parts.
func (l *logBuffer) count(parts ...string) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			n++
		}
	}
	return n
}

// startLive starts a kfake broker and the pipeline on liveConfig(o) (its
// brokers set here), unsigned, its verdicts also kept in the returned
// log.
func startLive(t testing.TB, o liveOpts) (*testharness.Kafka, *config.File, *verdictLog, *e2eRun) {
	t.Helper()
	k := testharness.StartKafka(t)
	o.brokers = k.Brokers
	cfg := liveConfig(t, o)
	log := &verdictLog{}
	return k, cfg, log, startLoggedRun(t, cfg, log)
}

// startLoggedRun runs the pipeline on cfg, unsigned, with log as an
// extra sink.
func startLoggedRun(t testing.TB, cfg *config.File, log *verdictLog) *e2eRun {
	t.Helper()
	return startRunWith(t, pipeline.Options{Config: cfg, InsecureUnsigned: true, ExtraSinks: []engine.Sink{log}})
}
