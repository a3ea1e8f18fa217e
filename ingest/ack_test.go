package ingest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/segmentio/kafka-go"
)

func okMsgs(parts, perPart int, prefix string) []kafka.Message {
	var out []kafka.Message
	for p := 0; p < parts; p++ {
		for i := 0; i < perPart; i++ {
			out = append(out, msg(p, fmt.Sprintf("%s-%d-%d", prefix, p, i), []byte(fmt.Sprintf("ok:%s-%d-%d", prefix, p, i))))
		}
	}
	return out
}

func payloads(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i], _ = r.Payload.(string)
	}
	sort.Strings(out)
	return out
}

func machineryOpts(s *sink, extra ...Opt) []Opt {
	return append([]Opt{SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder), DLQTopic("dlq"), Handlers(s.factory)}, extra...)
}

// TestKafkaAckRedelivery is the ack contract end to end: records delivered but
// not acknowledged come back to the next consumer of the group; once
// acknowledged and the consumer stopped, they do not.
func TestKafkaAckRedelivery(t *testing.T) {
	k := testharness.StartBroker(t)
	pub := machineryTopics(t, k, 2)
	pub.publish(t, okMsgs(2, 5, "r")...)

	// 1: a handler that stops before acking.
	s1 := &sink{ack: func(*Batch) bool { return false }}
	r1 := start(t, k, "g-ack", machineryOpts(s1)...)
	testharness.Eventually(t, 30*time.Second, "first consumer sees 10 records", func() bool { return s1.count() == 10 })
	if err := r1.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if c := committed(t, k, "g-ack", "in"); len(c) != 0 {
		t.Fatalf("offsets committed without any ack: %v", c)
	}

	// 2: a new client in the same group sees the same records again, and
	// acknowledges them.
	s2 := &sink{}
	r2 := start(t, k, "g-ack", machineryOpts(s2)...)
	testharness.Eventually(t, 30*time.Second, "second consumer sees the 10 records again", func() bool { return s2.count() == 10 })
	if a, b := payloads(s1.snapshot()), payloads(s2.snapshot()); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("redelivered %v, want %v", b, a)
	}
	if err := r2.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	ends := k.EndOffsets(t, "in")
	if c := committed(t, k, "g-ack", "in"); c[0] != ends[0] || c[1] != ends[1] {
		t.Fatalf("after acking everything and stopping, committed %v, want %v", c, ends)
	}

	// 3: after the ack and a restart, only what is new arrives.
	s3 := &sink{}
	start(t, k, "g-ack", machineryOpts(s3)...)
	pub.publish(t, msg(1, "late", []byte("ok:late")))
	testharness.Eventually(t, 30*time.Second, "third consumer sees the new record", func() bool { return s3.count() >= 1 })
	time.Sleep(500 * time.Millisecond) // room for any wrongly redelivered record to show up
	if got := payloads(s3.snapshot()); len(got) != 1 || got[0] != "ok:late" {
		t.Fatalf("after ack and restart got %v, want only [ok:late]", got)
	}
}

// TestOutOfOrderAcks: of three batches of one partition, acking the second
// and third commits nothing; acking the first then commits all three.
func TestOutOfOrderAcks(t *testing.T) {
	k := testharness.StartKafka(t)
	pub := machineryTopics(t, k, 1)
	s := &sink{ack: func(*Batch) bool { return false }}
	start(t, k, "g-ooo", machineryOpts(s)...)
	for i := 0; i < 3; i++ {
		pub.publish(t, msg(0, fmt.Sprint(i), []byte(fmt.Sprintf("ok:%d", i))))
		testharness.Eventually(t, 30*time.Second, fmt.Sprintf("batch %d", i), func() bool { return len(s.heldBatches()) == i+1 })
	}
	bs := s.heldBatches()
	for i, b := range bs {
		if b.FirstOffset != int64(i) || b.NextOffset != int64(i+1) {
			t.Fatalf("batch %d covers [%d, %d), want [%d, %d)", i, b.FirstOffset, b.NextOffset, i, i+1)
		}
	}
	bs[2].Ack()
	bs[1].Ack()
	bs[1].Ack() // idempotent
	// Absence: five commit intervals for a wrong commit to show.
	time.Sleep(500 * time.Millisecond)
	if c := committed(t, k, "g-ooo", "in"); len(c) != 0 {
		t.Fatalf("committed %v with the first batch unacked", c)
	}
	bs[0].Ack()
	testharness.Eventually(t, 30*time.Second, "commit of the whole acked prefix", func() bool {
		return committed(t, k, "g-ooo", "in")[0] == 3
	})
}

// startHandler resumes at a fixed offset, as the engine does from a
// snapshot.
type startHandler struct {
	sinkHandler
	at        int64
	mu        *sync.Mutex
	committed *[]int64
}

func (h *startHandler) Start(_ context.Context, committed int64) (int64, error) {
	h.mu.Lock()
	*h.committed = append(*h.committed, committed)
	h.mu.Unlock()
	return h.at, nil
}

func TestStarterSeeks(t *testing.T) {
	k := testharness.StartKafka(t)
	pub := machineryTopics(t, k, 1)
	pub.publish(t, okMsgs(1, 10, "s")...)

	var mu sync.Mutex
	var seen []int64
	run := func(at int64, want int) *sink {
		s := &sink{}
		r := start(t, k, "g-start", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder), DLQTopic("dlq"),
			Handlers(func(topic string, p int32) PartitionHandler {
				return &startHandler{sinkHandler: sinkHandler{s: s, topic: topic, partition: p}, at: at, mu: &mu, committed: &seen}
			}))
		testharness.Eventually(t, 30*time.Second, "records from the start offset", func() bool { return s.count() == want })
		if err := r.shutdown(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
		return s
	}
	s := run(4, 6)
	if got := s.snapshot()[0].Offset; got != 4 {
		t.Fatalf("first record at offset %d, want 4 (the Starter's)", got)
	}
	// -1 keeps the committed offset (10 after the first run acked all).
	pub.publish(t, msg(0, "x", []byte("ok:x")))
	s = run(-1, 1)
	if got := s.snapshot(); len(got) != 1 || got[0].Offset != 10 {
		t.Fatalf("with Start -1 got %d records from offset %d, want 1 from the committed 10", len(got), got[0].Offset)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != -1 || seen[1] != 10 {
		t.Fatalf("Start saw committed offsets %v, want [-1 10]", seen)
	}
}

type failingHandler struct{ sinkHandler }

func (h *failingHandler) Handle(ctx context.Context, b *Batch) error {
	for _, r := range b.Records {
		if r.Payload == "ok:fail" {
			return errors.New("sink refused")
		}
	}
	return h.sinkHandler.Handle(ctx, b)
}

// TestHandlerErrorStopsRun: a Handle error ends Run with a *HandlerError;
// what was acknowledged before it is committed.
func TestHandlerErrorStopsRun(t *testing.T) {
	k := testharness.StartKafka(t)
	pub := machineryTopics(t, k, 1)
	s := &sink{}
	r := start(t, k, "g-fail", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder), DLQTopic("dlq"),
		Handlers(func(topic string, p int32) PartitionHandler {
			return &failingHandler{sinkHandler{s: s, topic: topic, partition: p}}
		}))
	pub.publish(t, msg(0, "a", []byte("ok:a")))
	testharness.Eventually(t, 30*time.Second, "first record", func() bool { return s.count() == 1 })
	pub.publish(t, msg(0, "b", []byte("ok:fail")))
	var err error
	select {
	case err = <-r.done:
		close(r.done)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the handler failed")
	}
	var he *HandlerError
	if !errors.As(err, &he) || he.Topic != "in" || he.Partition != 0 {
		t.Fatalf("Run returned %v, want a *HandlerError for in[0]", err)
	}
	if c := committed(t, k, "g-fail", "in"); c[0] != 1 {
		t.Fatalf("committed %v, want offset 1 (the acked first record)", c)
	}
}

// blockingHandler blocks in Handle until its context ends.
type blockingHandler struct {
	entered  chan struct{}
	canceled chan struct{}
	closed   chan CloseReason
}

func (h *blockingHandler) Handle(ctx context.Context, b *Batch) error {
	close(h.entered)
	<-ctx.Done()
	close(h.canceled)
	return ctx.Err()
}

func (h *blockingHandler) Close(_ context.Context, r CloseReason) { h.closed <- r }

// TestCloseTimeoutCancelsHandle: at shutdown an in-flight Handle keeps its
// context until CloseTimeout, then it is canceled; its error is not a
// failure, Close still runs, and nothing unacked is committed.
func TestCloseTimeoutCancelsHandle(t *testing.T) {
	k := testharness.StartKafka(t)
	machineryTopics(t, k, 1).publish(t, msg(0, "a", []byte("ok:a")))
	h := &blockingHandler{entered: make(chan struct{}), canceled: make(chan struct{}), closed: make(chan CloseReason, 1)}
	r := start(t, k, "g-timeout", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder), DLQTopic("dlq"),
		CloseTimeout(300*time.Millisecond), Handlers(func(string, int32) PartitionHandler { return h }))
	select {
	case <-h.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("Handle never called")
	}
	t0 := time.Now()
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Run returned %v after a shutdown; a Handle canceled by CloseTimeout is not a failure", err)
	}
	select {
	case <-h.canceled:
	default:
		t.Fatal("Handle's context was not canceled")
	}
	if took := time.Since(t0); took < 300*time.Millisecond {
		t.Errorf("Handle canceled %v after shutdown began, before CloseTimeout (300ms)", took)
	}
	if r := <-h.closed; r != CloseShutdown {
		t.Errorf("Close reason %v, want shutdown", r)
	}
	if c := committed(t, k, "g-timeout", "in"); len(c) != 0 {
		t.Errorf("committed %v with nothing acked", c)
	}
}

// idleHandler acks its batches only from Idle, as the engine acks at a
// checkpoint of a partition that went quiet.
type idleHandler struct {
	sinkHandler
	mu      sync.Mutex
	pending []*Batch
	idles   int
}

func (h *idleHandler) Handle(ctx context.Context, b *Batch) error {
	h.mu.Lock()
	h.pending = append(h.pending, b)
	h.mu.Unlock()
	h.s.mu.Lock()
	h.s.records = append(h.s.records, b.Records...)
	h.s.mu.Unlock()
	return nil
}

func (h *idleHandler) Idle(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.idles++
	for _, b := range h.pending {
		b.Ack()
	}
	h.pending = nil
	return nil
}

// TestIdlerRunsWhenThePartitionIsQuiet: Idle is called on a partition with
// no new batch, and what it acknowledges gets committed.
func TestIdlerRunsWhenThePartitionIsQuiet(t *testing.T) {
	k := testharness.StartKafka(t)
	pub := machineryTopics(t, k, 1)
	pub.publish(t, okMsgs(1, 5, "q")...)
	s := &sink{}
	var h *idleHandler
	r := start(t, k, "g-idle", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder), DLQTopic("dlq"),
		IdleInterval(50*time.Millisecond), CommitInterval(50*time.Millisecond),
		Handlers(func(topic string, p int32) PartitionHandler {
			h = &idleHandler{sinkHandler: sinkHandler{s: s, topic: topic, partition: p}}
			return h
		}))
	testharness.Eventually(t, 30*time.Second, "the records", func() bool { return s.count() == 5 })
	testharness.Eventually(t, 30*time.Second, "an Idle call", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.idles > 0 && len(h.pending) == 0
	})
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	// A new consumer of the group sees nothing again: the idle ack was
	// committed.
	s2 := &sink{}
	r2 := start(t, k, "g-idle", machineryOpts(s2)...)
	pub.publish(t, msg(0, "x", []byte("ok:after")))
	testharness.Eventually(t, 30*time.Second, "the new record", func() bool { return s2.count() >= 1 })
	if err := r2.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if got := payloads(s2.snapshot()); len(got) != 1 || got[0] != "ok:after" {
		t.Fatalf("after the idle ack the group re-read %v, want only the new record", got)
	}
}

// slowStartHandler's Start takes a while, as the engine's restore of a
// checkpoint does; Idle records whether it ran before Start returned.
type slowStartHandler struct {
	idleHandler
	// gate, when not nil, holds Start (after its 400 ms) until it is
	// closed: the test looks at the consumer while Start surely runs.
	gate       chan struct{}
	started    atomic.Bool
	idleEarly  atomic.Int64
	startCalls atomic.Int64
}

func (h *slowStartHandler) Start(ctx context.Context, committed int64) (int64, error) {
	h.startCalls.Add(1)
	select {
	case <-time.After(400 * time.Millisecond):
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	if h.gate != nil {
		select {
		case <-h.gate:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
	h.started.Store(true)
	return -1, nil
}

func (h *slowStartHandler) Idle(ctx context.Context) error {
	if !h.started.Load() {
		h.idleEarly.Add(1)
	}
	return h.idleHandler.Idle(ctx)
}

// TestIdleWaitsForStart: a partition's idle timer fires while its
// handler's Start (called on the group's goroutine) is still running; Idle
// must not be called before Start returned — it would touch the state
// Start is building (the race detector saw engine's keyedPartition.Idle
// read the worker setWorker was writing).
func TestIdleWaitsForStart(t *testing.T) {
	k := testharness.StartKafka(t)
	pub := machineryTopics(t, k, 1)
	pub.publish(t, okMsgs(1, 3, "s")...)
	s := &sink{}
	var mu sync.Mutex
	var hs []*slowStartHandler
	gate := make(chan struct{})
	r := start(t, k, "g-slowstart", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder), DLQTopic("dlq"),
		IdleInterval(10*time.Millisecond), CommitInterval(50*time.Millisecond),
		Handlers(func(topic string, p int32) PartitionHandler {
			h := &slowStartHandler{idleHandler: idleHandler{sinkHandler: sinkHandler{s: s, topic: topic, partition: p}}, gate: gate}
			mu.Lock()
			hs = append(hs, h)
			mu.Unlock()
			return h
		}))
	// While Start runs the partition counts as starting (Stats.Starting,
	// what readiness waits on): a snapshot taken before the handler's
	// Start returned must say so.
	testharness.Eventually(t, 30*time.Second, "Start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hs) > 0 && hs[0].startCalls.Load() > 0
	})
	// Start is held at the gate until after this check.
	if st := r.c.Stats(); st.Starting != 1 || st.Partitions != 1 {
		t.Errorf("during Start: Starting %d of %d partitions, want 1 of 1", st.Starting, st.Partitions)
	}
	close(gate)
	testharness.Eventually(t, 30*time.Second, "the records", func() bool { return s.count() == 3 })
	if st := r.c.Stats(); st.Starting != 0 || st.Partitions != 1 {
		t.Errorf("after Start: Starting %d of %d partitions, want 0 of 1", st.Starting, st.Partitions)
	}
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hs) == 0 {
		t.Fatal("no handler was made")
	}
	for _, h := range hs {
		if h.startCalls.Load() == 0 {
			t.Errorf("%s[%d]: Start was never called", h.topic, h.partition)
		}
		if n := h.idleEarly.Load(); n > 0 {
			t.Errorf("%s[%d]: Idle ran %d times before Start returned", h.topic, h.partition, n)
		}
	}
}
