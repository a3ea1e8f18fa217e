package ingest

import (
	"encoding/hex"
	"log/slog"
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

// noiseBytes returns n incompressible bytes: the producer's compression
// cannot bring them under a limit.
func noiseBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestKafkaDeadLetterOversized sends malformed records too large for a DLQ
// topic of default configs (Apache Kafka's message.max.bytes, 1,048,588 B)
// in each of their parts, between good records: 2 MB of the team's own
// headers, one 2 MB header named like fusebox's own, a 2 MB key, and a
// value and headers both over 1 MB. Each dead letter is written, losing
// only its largest parts (largest first), each loss described in a
// fusebox.dlq.* header; the good records are all delivered and the offset
// is committed past everything, with no retry.
func TestKafkaDeadLetterOversized(t *testing.T) {
	k := testharness.StartBroker(t)
	k.CreateTopic(t, "in", 1, testharness.MaxMessageBytes(6<<20))
	k.CreateTopic(t, "dlq", 1, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	blob := func(n int) []byte { return noiseBytes(rng, n) }
	teamHeaders := []kafka.Header{ // 4 × 500 KB: 2 MB of headers, each small enough alone
		{Key: "team.a", Value: blob(500_000)}, {Key: "team.b", Value: blob(500_000)},
		{Key: "team.c", Value: blob(500_000)}, {Key: "team.d", Value: blob(500_000)},
	}
	teamBytes := 0
	for _, h := range teamHeaders {
		teamBytes += len(h.Key) + len(h.Value)
	}
	impostor := kafka.Header{Key: "fusebox.error", Value: blob(2_000_000)} // a producer's, not fusebox's
	bigValue := append([]byte("malformed:"), blob(1_600_000)...)
	midHeaders := []kafka.Header{{Key: "team.x", Value: blob(600_000)}, {Key: "team.y", Value: blob(600_000)}}
	bigKey := kafka.Message{Key: blob(2_000_000), Value: []byte("malformed:key")}

	pub := newPublisher(t, k, "in")
	pub.w.BatchBytes = 16 << 20
	for _, m := range []kafka.Message{msg(0, "g1", []byte("ok:1")),
		msg(0, "headers", []byte("malformed:headers"), teamHeaders...),
		msg(0, "g2", []byte("ok:2")),
		msg(0, "impostor", []byte("malformed:impostor"), impostor),
		bigKey,
		msg(0, "both", bigValue, midHeaders...),
		msg(0, "g3", []byte("ok:3"))} {
		pub.publish(t, m) // one at a time: together they exceed the topic's limit
	}

	s := &sink{}
	r := start(t, k, "g-oversized", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder),
		DLQTopic("dlq"), Handlers(s.factory))
	testharness.Eventually(t, 60*time.Second, "good records delivered", func() bool { return s.count() == 3 })
	testharness.Eventually(t, 60*time.Second, "offset committed past every record", func() bool { return committed(t, k, "g-oversized", "in")[0] == 7 })
	dead := k.ReadAll(t, "dlq", 4, 20*time.Second)
	if len(dead) != 4 {
		t.Fatalf("DLQ holds %d records, want 4", len(dead))
	}
	bySource := map[string]*kgo.Record{}
	for _, d := range dead {
		bySource[header(d, HeaderSourceOffset)] = d
		if header(d, HeaderErrorKind) != string(KindMalformed) || header(d, HeaderSourceTopic) != "in" {
			t.Errorf("dead letter of offset %s: kind %q, topic %q; want malformed from in", header(d, HeaderSourceOffset), header(d, HeaderErrorKind), header(d, HeaderSourceTopic))
		}
	}

	// 2 MB of the team's headers: they go, the value and key stay.
	if d := bySource["1"]; d == nil {
		t.Error("no dead letter for the record with 2 MB of headers (offset 1)")
	} else {
		if string(d.Value) != "malformed:headers" || string(d.Key) != "0/headers" || header(d, HeaderValueOmitted) != "" {
			t.Errorf("headers record: value %q, key %q, value_omitted %q; want value and key kept", d.Value, d.Key, header(d, HeaderValueOmitted))
		}
		if header(d, HeaderHeadersOmitted) != "4" || header(d, HeaderHeadersOmittedBytes) != strconv.Itoa(teamBytes) || header(d, "team.a") != "" {
			t.Errorf("headers record: headers_omitted %q, bytes %q (want 4, %d), team.a present %v",
				header(d, HeaderHeadersOmitted), header(d, HeaderHeadersOmittedBytes), teamBytes, header(d, "team.a") != "")
		}
	}
	// A producer's 2 MB header named fusebox.error is the record's own:
	// dropped like any, fusebox's own error header kept.
	if d := bySource["3"]; d == nil {
		t.Error("no dead letter for the record with a 2 MB fusebox.error header of its own (offset 3): it must not stall the partition either")
	} else {
		errs := headerValues(d, HeaderError)
		if header(d, HeaderHeadersOmitted) != "1" || len(errs) != 1 || !strings.Contains(errs[0], "truncated") || string(d.Value) != "malformed:impostor" {
			t.Errorf("impostor record: headers_omitted %q, %d fusebox.error headers (first %.40q), value %q; want its header dropped, fusebox's error kept, the value kept",
				header(d, HeaderHeadersOmitted), len(errs), firstOr(errs), d.Value)
		}
	}
	// A 2 MB key is replaced by the source's topic/partition/offset; the
	// value stays.
	if d := bySource["4"]; d == nil {
		t.Error("no dead letter for the record with a 2 MB key (offset 4)")
	} else if string(d.Key) != "in/0/4" || header(d, HeaderKeyOmitted) != strconv.Itoa(len(bigKey.Key)) || string(d.Value) != "malformed:key" {
		t.Errorf("key record: key %.20q (%d bytes), key_omitted %q, value %q; want in/0/4, %d, the value", d.Key, len(d.Key), header(d, HeaderKeyOmitted), d.Value, len(bigKey.Key))
	}
	// 1.6 MB value and 1.2 MB headers: the value goes first, then the
	// headers (the copy without its value is still 1.2 MB).
	if d := bySource["5"]; d == nil {
		t.Error("no dead letter for the record with a big value and big headers (offset 5)")
	} else if len(d.Value) != 0 || header(d, HeaderValueOmitted) != strconv.Itoa(len(bigValue)) || header(d, HeaderValueSHA256) == "" ||
		header(d, HeaderHeadersOmitted) != "2" || string(d.Key) != "0/both" {
		t.Errorf("value+headers record: value %d bytes, value_omitted %q, headers_omitted %q, key %q; want both omitted, the key kept",
			len(d.Value), header(d, HeaderValueOmitted), header(d, HeaderHeadersOmitted), d.Key)
	}

	st := r.c.Stats()
	want := map[string]int64{OmittedValue: 1, OmittedHeaders: 3, OmittedKey: 1, OmittedDetails: 0}
	for part, n := range want {
		if st.DLQOmitted[part] != n {
			t.Errorf("DLQOmitted[%s] = %d, want %d", part, st.DLQOmitted[part], n)
		}
	}
	if st.DLQRetries != 0 || st.DLQUnwritable != 0 || st.DLQWritten != 4 {
		t.Errorf("DLQRetries %d, DLQUnwritable %d, DLQWritten %d; want 0, 0, 4", st.DLQRetries, st.DLQUnwritable, st.DLQWritten)
	}
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// longErrDecoder is testDecoder with one more verb: "long:..." fails as
// malformed with a 6 KB message of random hex (clipped to 4 KiB in the
// dead letter; about 2 KB after the producer's compression).
var longErrDecoder = DecoderFunc(func(ts int64, h []Header, value []byte, out *Record) error {
	if strings.HasPrefix(string(value), "long:") {
		return fieldErr(schemas.ErrMalformed, "body", hex.EncodeToString(noiseBytes(rand.New(rand.NewPCG(7, 8)), 3000)))
	}
	return testDecoder(ts, h, value, out)
})

// TestKafkaDeadLetterTrimmedOrUnwritable: DLQ topics whose
// max.message.bytes is tiny. At 1,500 B three dead letters with a 4 KiB
// error message each, from one chunk, are written with fusebox's headers
// trimmed (the message cut to 256 B, fusebox.dlq.trimmed), though
// together they exceed the limit. At 120 B nothing fits: the dead letters
// are given up — counted, logged at ERROR with the source offset — and the
// partition goes on: the good records after it are delivered and the
// offset committed past it, not stalled behind a write that cannot succeed.
func TestKafkaDeadLetterTrimmedOrUnwritable(t *testing.T) {
	k := testharness.StartBroker(t)
	k.CreateTopic(t, "dlq-tiny", 1, testharness.MaxMessageBytes(1500))
	k.CreateTopic(t, "dlq-none", 1, testharness.MaxMessageBytes(120))
	k.CreateTopic(t, "in-dlq-tiny", 1, nil)
	k.CreateTopic(t, "in-dlq-none", 1, nil)

	for _, c := range []struct {
		dlq      string
		writable bool
	}{{"dlq-tiny", true}, {"dlq-none", false}} {
		t.Run(c.dlq, func(t *testing.T) {
			group := "g-" + c.dlq
			var logs lockedBuffer
			log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			s := &sink{}
			in := "in-" + c.dlq
			pub := newPublisher(t, k, in)
			// Three dead letters in one chunk: shrunk together, they
			// are re-produced together and can share a batch over
			// the limit that each fits alone.
			pub.publish(t, msg(0, "a", []byte("ok:1")), msg(0, "b", []byte("long:x"), kafka.Header{Key: "team.trace", Value: []byte("t1")}),
				msg(0, "b2", []byte("long:y")), msg(0, "b3", []byte("long:z")), msg(0, "c", []byte("ok:5")))
			r := start(t, k, group, SpanTopics(), CorrectionTopics(), TopicDecoder(in, longErrDecoder),
				DLQTopic(c.dlq), Handlers(s.factory), Logger(log), DLQRetryBackoffMax(200*time.Millisecond))
			testharness.Eventually(t, 60*time.Second, "good records delivered", func() bool { return s.count() == 2 })
			testharness.Eventually(t, 60*time.Second, "offset committed past the dead letter", func() bool {
				return committed(t, k, group, in)[0] == 5
			})
			st := r.c.Stats()
			if c.writable {
				dead := k.ReadAll(t, c.dlq, 3, 20*time.Second)
				if len(dead) != 3 {
					t.Fatalf("DLQ holds %d records, want 3 (given up: %d)", len(dead), st.DLQUnwritable)
				}
				// Retried after random delays: in any order.
				seen := map[string]bool{}
				for i, d := range dead {
					seen[header(d, HeaderSourceOffset)] = true
					if header(d, HeaderTrimmed) != "true" || len(header(d, HeaderError)) > trimmedErrorBytes || !strings.HasPrefix(header(d, HeaderError), "malformed") ||
						header(d, HeaderErrorField) != "body" {
						t.Errorf("trimmed dead letter %d: trimmed %q, error %d bytes %.30q, source offset %q, field %q", i,
							header(d, HeaderTrimmed), len(header(d, HeaderError)), header(d, HeaderError), header(d, HeaderSourceOffset), header(d, HeaderErrorField))
					}
				}
				if !seen["1"] || !seen["2"] || !seen["3"] {
					t.Errorf("trimmed dead letters of source offsets %v, want 1, 2, 3", seen)
				}
				if st.DLQOmitted[OmittedDetails] != 3 || st.DLQUnwritable != 0 {
					t.Errorf("DLQOmitted[details] %d, DLQUnwritable %d; want 3, 0", st.DLQOmitted[OmittedDetails], st.DLQUnwritable)
				}
				return
			}
			if st.DLQUnwritable != 3 || st.DLQRetries != 0 {
				t.Errorf("DLQUnwritable %d, DLQRetries %d; want 3, 0", st.DLQUnwritable, st.DLQRetries)
			}
			lines := logs.lines(t, "ingest: dead letter NOT written")
			if len(lines) != 3 {
				t.Fatalf("log lines for the unwritable dead letters: %v; want 3", lines)
			}
			offsets := map[float64]bool{}
			for _, l := range lines {
				offsets[l["source_offset"].(float64)] = true
				if l["level"] != "ERROR" || l["source_topic"] != in || l["kind"] != string(KindMalformed) || !strings.HasPrefix(l["error"].(string), "malformed") {
					t.Errorf("log line for an unwritable dead letter: %v; want ERROR naming %s, its kind and error", l, in)
				}
			}
			if !offsets[1] || !offsets[2] || !offsets[3] {
				t.Errorf("unwritable dead letters logged for offsets %v, want 1, 2, 3", offsets)
			}
		})
	}
}
