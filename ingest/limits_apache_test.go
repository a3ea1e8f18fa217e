package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/segmentio/kafka-go"
)

// TestKafkaDefaultLimitsDLQ runs on the harness's broker (Apache Kafka in the
// conformance set) with a DLQ topic of default configs, so the broker's
// message.max.bytes (1,048,588 bytes on Apache Kafka) applies. The source
// topic takes records up to 4 MiB (max.message.bytes), as a team sending
// big batches would configure it. Malformed records arrive between good
// ones: two of 600 KB each, which fit the DLQ alone but not together in one
// produce batch, must be copied whole; one of 2 MB cannot fit and is copied
// with its headers, its size and the SHA-256 of its value instead; the
// good records keep flowing and the offsets end committed past everything,
// with no retry loop.
func TestKafkaDefaultLimitsDLQ(t *testing.T) {
	k := testharness.StartBroker(t)
	k.CreateTopic(t, "in", 1, testharness.MaxMessageBytes(4<<20))
	k.CreateTopic(t, "dlq", 1, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	noise := func(n int) []byte { // incompressible: compression cannot shrink it under the limit
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	mid1 := append([]byte("malformed:"), noise(600_000)...)
	mid2 := append([]byte("malformed:"), noise(600_000)...)
	huge := append([]byte("malformed:"), noise(2_000_000)...)
	orig := kafka.Header{Key: "team.trace", Value: []byte("abc")}
	pub := newPublisher(t, k, "in")
	pub.w.BatchBytes = 8 << 20
	pub.publish(t, msg(0, "a", []byte("ok:1")), msg(0, "b", mid1, orig), msg(0, "c", mid2, orig), msg(0, "d", []byte("ok:4")),
		msg(0, "e", huge, orig), msg(0, "f", []byte("ok:6")))

	s := &sink{}
	r := start(t, k, "g-limits", SpanTopics(), CorrectionTopics(), TopicDecoder("in", testDecoder),
		DLQTopic("dlq"), Handlers(s.factory))
	testharness.Eventually(t, 60*time.Second, "good records delivered", func() bool { return s.count() == 3 })
	testharness.Eventually(t, 60*time.Second, "offset committed past every record", func() bool { return committed(t, k, "g-limits", "in")[0] == 6 })
	dead := k.ReadAll(t, "dlq", 3, 20*time.Second)
	if len(dead) != 3 {
		t.Fatalf("DLQ holds %d records, want 3", len(dead))
	}
	for i, want := range [][]byte{mid1, mid2} {
		if d := dead[i]; string(d.Value) != string(want) || header(d, HeaderValueOmitted) != "" || header(d, "team.trace") != "abc" {
			t.Errorf("DLQ record %d: %d bytes, omitted %q: want the %d-byte record whole with its headers", i, len(d.Value), header(d, HeaderValueOmitted), len(want))
		}
	}
	d := dead[2]
	sum := sha256.Sum256(huge)
	if len(d.Value) != 0 || header(d, HeaderValueOmitted) != strconv.Itoa(len(huge)) ||
		header(d, HeaderValueSHA256) != hex.EncodeToString(sum[:]) || header(d, "team.trace") != "abc" ||
		header(d, HeaderSourceOffset) != "4" || header(d, HeaderErrorKind) != string(KindMalformed) {
		t.Errorf("oversized DLQ record: value %d bytes, headers %v; want none, its size, its SHA-256, its own and the source headers", len(d.Value), d.Headers)
	}
	st := r.c.Stats()
	if st.DLQValueOmitted != 1 {
		t.Errorf("DLQValueOmitted = %d, want 1", st.DLQValueOmitted)
	}
	if st.DLQRetries != 0 {
		t.Errorf("DLQRetries = %d, want 0: a record that cannot fit is not retried", st.DLQRetries)
	}
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
