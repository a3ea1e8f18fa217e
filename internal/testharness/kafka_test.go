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
