package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testLogger logs to stderr when FUSEBOX_TEST_LOG is set, else discards.
func testLogger() *slog.Logger {
	if os.Getenv("FUSEBOX_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// publisher writes with segmentio/kafka-go, as a team's service would. The
// partition of a message is the number before the first '/' of its key.
type publisher struct {
	w *kafka.Writer
}

func newPublisher(t testing.TB, k *testharness.Kafka, topic string) *publisher {
	t.Helper()
	w := &kafka.Writer{
		Addr:         kafka.TCP(k.Brokers...),
		Topic:        topic,
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond,
		BatchBytes:   64 << 20,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
			key := string(m.Key)
			if i := strings.IndexByte(key, '/'); i > 0 {
				if n, err := strconv.Atoi(key[:i]); err == nil {
					return partitions[n%len(partitions)]
				}
			}
			return partitions[0]
		}),
	}
	t.Cleanup(func() { w.Close() })
	return &publisher{w: w}
}

// publish writes the messages in order and fails the test on error.
func (p *publisher) publish(t testing.TB, msgs ...kafka.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go publish: %v", err)
	}
}

// msg builds a message for partition part.
func msg(part int, id string, value []byte, headers ...kafka.Header) kafka.Message {
	return kafka.Message{Key: []byte(strconv.Itoa(part) + "/" + id), Value: value, Headers: headers}
}

// sink collects what handlers receive.
type sink struct {
	mu      sync.Mutex
	batches []*Batch
	records []Record
	closes  []string
	// ack decides whether a batch is acked at once (default yes).
	ack func(b *Batch) bool
}

func (s *sink) factory(topic string, partition int32) PartitionHandler {
	return &sinkHandler{s: s, topic: topic, partition: partition}
}

func (s *sink) snapshot() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

func (s *sink) heldBatches() []*Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Batch(nil), s.batches...)
}

type sinkHandler struct {
	s         *sink
	topic     string
	partition int32
}

func (h *sinkHandler) Handle(_ context.Context, b *Batch) error {
	h.s.mu.Lock()
	h.s.batches = append(h.s.batches, b)
	h.s.records = append(h.s.records, b.Records...)
	ack := h.s.ack
	h.s.mu.Unlock()
	if ack == nil || ack(b) {
		b.Ack()
	}
	return nil
}

func (h *sinkHandler) Close(_ context.Context, reason CloseReason) {
	h.s.mu.Lock()
	h.s.closes = append(h.s.closes, fmt.Sprintf("%s[%d]:%s", h.topic, h.partition, reason))
	h.s.mu.Unlock()
}

// running is a consumer started by start.
type running struct {
	c    *Consumer
	stop context.CancelFunc
	done chan error
}

// start creates a consumer with the test brokers, group and logger plus
// opts, and runs it until the returned stop (or the test's end).
func start(t testing.TB, k *testharness.Kafka, group string, opts ...Opt) *running {
	t.Helper()
	base := []Opt{Brokers(k.Brokers...), Group(group), Logger(testLogger()), CommitInterval(100 * time.Millisecond),
		ClientOpts(kgo.FetchMaxWait(200 * time.Millisecond))}
	c, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	t.Cleanup(func() { r.shutdown(t) })
	return r
}

// shutdown stops the consumer and returns Run's error (once; later calls
// return nil).
func (r *running) shutdown(t testing.TB) error {
	t.Helper()
	r.stop()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("Run did not return within 60s of its context ending")
	}
	return nil
}

// committed returns the group's committed offsets of topic by partition.
func committed(t testing.TB, k *testharness.Kafka, group, topic string) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(k.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}
	}
	// Apache Kafka creates __consumer_offsets on first use and answers
	// COORDINATOR_NOT_AVAILABLE until it is loaded: nothing committed yet.
	if errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator) {
		return map[int32]int64{}
	}
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	out := map[int32]int64{}
	for _, ps := range resp {
		for p, o := range ps {
			if o.Topic == topic && o.Err == nil {
				out[p] = o.At
			}
		}
	}
	return out
}

// headerValues returns every value of header key, in order.
func headerValues(r *kgo.Record, key string) []string {
	var out []string
	for _, h := range r.Headers {
		if h.Key == key {
			out = append(out, string(h.Value))
		}
	}
	return out
}

// header returns the last value of header key.
func header(r *kgo.Record, key string) string {
	v := headerValues(r, key)
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// testDecoder decodes "<verb>:<rest>" values, so that the consumer's
// machinery is tested without the OTLP decoders:
//
//	ok:...        delivered, Payload = the value
//	malformed:... ErrMalformed, field "body"
//	invalid:...   ErrInvalid, field "kind"
//	toolarge:...  ErrTooLarge, field "spans"
//	partial:...   delivered and dead-lettered partial (spans 1 and 4 of 5 invalid)
//	panic:...     panics
var testDecoder = DecoderFunc(func(_ int64, _ []Header, value []byte, out *Record) error {
	v := string(value)
	verb, _, _ := strings.Cut(v, ":")
	switch verb {
	case "ok":
		out.Payload = v
		return nil
	case "malformed":
		return fieldErr(schemas.ErrMalformed, "body", "truncated")
	case "invalid":
		return fieldErr(schemas.ErrInvalid, "kind", "unknown kind")
	case "toolarge":
		return fieldErr(schemas.ErrTooLarge, "spans", "100001 exceeds the limit of 100000")
	case "partial":
		out.Payload = v
		return &PartialError{Total: 5, Invalid: []InvalidSpan{
			{Index: 1, Err: fieldErr(schemas.ErrInvalid, "end_time_unix_nano", "end is before start")},
			{Index: 4, Err: fieldErr(schemas.ErrInvalid, "gen_ai.usage.output_tokens", "absurd token count -3")},
		}}
	case "panic":
		var m map[string]int
		m["boom"]++ // nil map write: a real runtime panic
		return nil
	}
	return errors.New("testDecoder: unknown verb " + strconv.Quote(verb))
})

func fieldErr(kind error, field, reason string) error {
	return fmt.Errorf("%w: %w", kind, &schemas.FieldError{Field: field, Reason: reason})
}

// machineryTopics creates the topics of the machinery tests — "in" with
// partitions partitions, "dlq" with one — and returns a publisher to
// "in" (it connects on its first write only).
func machineryTopics(t testing.TB, k *testharness.Kafka, partitions int32) *publisher {
	t.Helper()
	k.CreateTopic(t, "in", partitions, nil)
	k.CreateTopic(t, "dlq", 1, nil)
	return newPublisher(t, k, "in")
}
