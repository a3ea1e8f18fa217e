package ingest

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaDeadLetterMachinery interleaves bad records of every kind with good
// ones and checks that each bad one lands in the DLQ unchanged with the
// right headers, the good ones around it are delivered in order, and the
// group's offsets end committed past all of them.
func TestKafkaDeadLetterMachinery(t *testing.T) {
	k := testharness.StartBroker(t)
	pub := machineryTopics(t, k, 2)
	orig := kafka.Header{Key: "team.trace", Value: []byte("abc")}
	big := "ok:" + strings.Repeat("x", 2000) // past MaxMessageBytes=1000 below
	p0 := []string{"ok:1", "malformed:2", "ok:3", "invalid:4", "toolarge:5", "partial:6", "panic:7", big, "ok:9"}
	p1 := []string{"ok:a", "malformed:b", "ok:c"}
	var msgs []kafka.Message
	for i, v := range p0 {
		msgs = append(msgs, msg(0, "k"+strconv.Itoa(i), []byte(v), orig))
	}
	for i, v := range p1 {
		msgs = append(msgs, msg(1, "j"+strconv.Itoa(i), []byte(v)))
	}
	pub.publish(t, msgs...)

	lim := schemas.DefaultLimits()
	lim.MaxMessageBytes = 1000
	s := &sink{}
	r := start(t, k, "g-dlq", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder),
		DLQTopic("dlq"), Limits(lim), Handlers(s.factory))

	wantDelivered := map[string]bool{"ok:1": true, "ok:3": true, "partial:6": true, "ok:9": true, "ok:a": true, "ok:c": true}
	testharness.Eventually(t, 30*time.Second, "good records delivered", func() bool { return s.count() >= len(wantDelivered) })
	ends := k.EndOffsets(t, "in")
	testharness.Eventually(t, 30*time.Second, "offsets committed past every record", func() bool {
		c := committed(t, k, "g-dlq", "in")
		return c[0] == ends[0] && c[1] == ends[1]
	})

	got := s.snapshot()
	if len(got) != len(wantDelivered) {
		t.Fatalf("delivered %d records, want %d", len(got), len(wantDelivered))
	}
	last := map[int32]int64{0: -1, 1: -1}
	for _, rec := range got {
		v, _ := rec.Payload.(string)
		if !wantDelivered[v] {
			t.Errorf("delivered unexpected record %q at %d/%d", v, rec.Partition, rec.Offset)
		}
		if rec.Offset <= last[rec.Partition] {
			t.Errorf("partition %d: offset %d delivered after %d", rec.Partition, rec.Offset, last[rec.Partition])
		}
		last[rec.Partition] = rec.Offset
	}

	// The source records, to compare the dead letters with.
	src := map[string]*kgo.Record{}
	for _, rec := range k.ReadAll(t, "in", len(msgs), 20*time.Second) {
		src[string(rec.Value)] = rec
	}
	type want struct{ kind, field string }
	wantDLQ := map[string]want{
		"malformed:2": {"malformed", "body"},
		"invalid:4":   {"invalid", "kind"},
		"toolarge:5":  {"too_large", "spans"},
		"partial:6":   {"invalid", "end_time_unix_nano"},
		"panic:7":     {"malformed", ""},
		big:           {"too_large", "value"},
		"malformed:b": {"malformed", "body"},
	}
	dead := k.ReadAll(t, "dlq", len(wantDLQ), 20*time.Second)
	if len(dead) != len(wantDLQ) {
		t.Fatalf("DLQ holds %d records, want %d", len(dead), len(wantDLQ))
	}
	for _, d := range dead {
		v := string(d.Value)
		w, ok := wantDLQ[v]
		if !ok {
			t.Errorf("unexpected DLQ record %.40q", v)
			continue
		}
		delete(wantDLQ, v)
		o := src[v]
		if !bytes.Equal(d.Key, o.Key) {
			t.Errorf("%.20s: DLQ key %q, want the original %q", v, d.Key, o.Key)
		}
		for i, h := range o.Headers {
			if i >= len(d.Headers) || d.Headers[i].Key != h.Key || !bytes.Equal(d.Headers[i].Value, h.Value) {
				t.Errorf("%.20s: original header %d (%s) not kept first and unchanged", v, i, h.Key)
			}
		}
		checks := map[string]string{
			HeaderErrorKind:       w.kind,
			HeaderErrorField:      w.field,
			HeaderSourceTopic:     "in",
			HeaderSourcePartition: strconv.Itoa(int(o.Partition)),
			HeaderSourceOffset:    strconv.FormatInt(o.Offset, 10),
			HeaderSourceTimestamp: strconv.FormatInt(o.Timestamp.UnixMilli(), 10),
		}
		for hk, hv := range checks {
			if got := header(d, hk); got != hv {
				t.Errorf("%.20s: header %s = %q, want %q", v, hk, got, hv)
			}
		}
		if header(d, HeaderError) == "" {
			t.Errorf("%.20s: no %s header", v, HeaderError)
		}
		if v == "partial:6" {
			if header(d, HeaderPartial) != "true" || header(d, HeaderInvalidSpans) != "2/5" {
				t.Errorf("partial record headers: partial=%q invalid_spans=%q", header(d, HeaderPartial), header(d, HeaderInvalidSpans))
			}
			spans := headerValues(d, HeaderInvalidSpan)
			want := []string{"1 end_time_unix_nano: end is before start", "4 gen_ai.usage.output_tokens: absurd token count -3"}
			if strings.Join(spans, "|") != strings.Join(want, "|") {
				t.Errorf("invalid span headers = %q, want %q", spans, want)
			}
		} else if header(d, HeaderPartial) != "" {
			t.Errorf("%.20s: whole-record dead letter marked partial", v)
		}
		if v == "panic:7" && !strings.Contains(header(d, HeaderError), "panic") {
			t.Errorf("panic record error header %q does not say panic", header(d, HeaderError))
		}
	}
	for v := range wantDLQ {
		t.Errorf("record %.20q missing from the DLQ", v)
	}

	st := r.c.Stats()
	if st.DeadLettered[KindMalformed] != 3 || st.DeadLettered[KindInvalid] != 1 || st.DeadLettered[KindTooLarge] != 2 {
		t.Errorf("DeadLettered = %v, want malformed 3, invalid 1, too_large 2", st.DeadLettered)
	}
	if st.PartialDeadLettered != 1 || st.InvalidSpans != 2 || st.DecoderPanics != 1 || st.DLQWritten != 7 {
		t.Errorf("stats: partial %d invalid spans %d panics %d DLQ written %d; want 1, 2, 1, 7",
			st.PartialDeadLettered, st.InvalidSpans, st.DecoderPanics, st.DLQWritten)
	}
	if st.RecordsIn["in"] != int64(len(msgs)) {
		t.Errorf("RecordsIn[in] = %d, want %d", st.RecordsIn["in"], len(msgs))
	}
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestKafkaDeadLetterRetriedUntilDurable starts with no DLQ topic (and a client
// that may not create it): the DLQ write fails and is retried, and the
// partition's offset is not committed past the bad record until the topic
// exists and the write is acknowledged.
func TestKafkaDeadLetterRetriedUntilDurable(t *testing.T) {
	k := testharness.StartBroker(t)
	k.CreateTopic(t, "in", 1, nil)
	pub := newPublisher(t, k, "in")
	pub.publish(t, msg(0, "a", []byte("ok:1")), msg(0, "b", []byte("malformed:2")), msg(0, "c", []byte("ok:3")))

	s := &sink{}
	r := start(t, k, "g-retry", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder),
		DLQTopic("dlq-late"), DLQRetryBackoffMax(200*time.Millisecond), Handlers(s.factory),
		ClientOpts(kgo.UnknownTopicRetries(0)))
	testharness.Eventually(t, 30*time.Second, "good records delivered", func() bool { return s.count() == 2 })
	testharness.Eventually(t, 30*time.Second, "a failed DLQ write retried", func() bool { return r.c.Stats().DLQRetries >= 2 })
	if c := committed(t, k, "g-retry", "in"); c[0] > 1 {
		t.Fatalf("committed offset %d past the record whose DLQ write has not succeeded (offset 1)", c[0])
	}
	k.CreateTopic(t, "dlq-late", 1, nil)
	testharness.Eventually(t, 30*time.Second, "offset committed past the dead letter", func() bool {
		return committed(t, k, "g-retry", "in")[0] == 3
	})
	dead := k.ReadAll(t, "dlq-late", 1, 10*time.Second)
	if len(dead) != 1 || string(dead[0].Value) != "malformed:2" {
		t.Fatalf("DLQ = %d records, want the one malformed record", len(dead))
	}
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestKafkaDeadLetterTooLargeForDLQ: a DLQ topic whose max.message.bytes refuses
// the record gets it without its value and with the original size, instead
// of a write retried forever.
func TestKafkaDeadLetterTooLargeForDLQ(t *testing.T) {
	k := testharness.StartBroker(t)
	k.CreateTopic(t, "in", 1, nil)
	maxBytes := "2000"
	k.CreateTopic(t, "dlq-small", 1, map[string]*string{"max.message.bytes": &maxBytes})
	pub := newPublisher(t, k, "in")
	// Incompressible, so that the producer's compression cannot bring it
	// under the DLQ topic's limit.
	noise := make([]byte, 5000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	bad := "malformed:" + string(noise)
	pub.publish(t, msg(0, "a", []byte(bad)), msg(0, "b", []byte("ok:2")))

	s := &sink{}
	r := start(t, k, "g-omit", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder),
		DLQTopic("dlq-small"), Handlers(s.factory))
	testharness.Eventually(t, 30*time.Second, "offset committed past the dead letter", func() bool {
		return committed(t, k, "g-omit", "in")[0] == 2
	})
	dead := k.ReadAll(t, "dlq-small", 1, 10*time.Second)
	if len(dead) != 1 {
		t.Fatalf("DLQ holds %d records, want 1", len(dead))
	}
	d := dead[0]
	if len(d.Value) != 0 || header(d, HeaderValueOmitted) != strconv.Itoa(len(bad)) || header(d, HeaderSourceOffset) != "0" {
		t.Fatalf("DLQ record: value %d bytes, %s=%q, source offset %q; want no value, %d, 0",
			len(d.Value), HeaderValueOmitted, header(d, HeaderValueOmitted), header(d, HeaderSourceOffset), len(bad))
	}
	if st := r.c.Stats(); st.DLQValueOmitted != 1 {
		t.Errorf("DLQValueOmitted = %d, want 1", st.DLQValueOmitted)
	}
}
