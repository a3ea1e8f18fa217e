package testharness

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKfakeRoundTrip(t *testing.T) {
	k := StartKafka(t)
	k.Produce(t, &kgo.Record{Topic: "t", Value: []byte("a")}, &kgo.Record{Topic: "t", Value: []byte("b")})
	got := k.ReadAll(t, "t", 2, 10*time.Second)
	if len(got) != 2 {
		t.Fatalf("read %d records, want 2", len(got))
	}
}

// TestKfakeReadToEnd: ReadToEnd returns what the topic's partitions hold,
// without waiting for more.
func TestKfakeReadToEnd(t *testing.T) {
	k := StartKafka(t)
	k.CreateTopic(t, "t", 3, nil)
	k.Produce(t, &kgo.Record{Topic: "t", Value: []byte("a")}, &kgo.Record{Topic: "t", Value: []byte("b")})
	start := time.Now()
	if got := k.ReadToEnd(t, "t"); len(got) != 2 {
		t.Fatalf("read %d records, want 2", len(got))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("ReadToEnd took %v", d)
	}
}
