package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// TestKafkaGenTopicsReadyCreatesMissingTopics: gen's topics, missing on the
// broker, exist with a leader on every partition when genTopicsReady
// returns, before any record is produced (on Apache Kafka the produce's
// auto-creation alone failed records with UNKNOWN_TOPIC_OR_PARTITION on a
// loaded machine).
func TestKafkaGenTopicsReadyCreatesMissingTopics(t *testing.T) {
	k := testharness.StartBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topics := []string{"gen.ready.spans", "gen.ready.corrections"}
	if err := genTopicsReady(ctx, cl, genTopicsTimeout, topics...); err != nil {
		t.Fatalf("genTopicsReady: %v", err)
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	missing, notReady := topicsNotReady(td, topics)
	if len(missing)+len(notReady) > 0 {
		t.Fatalf("after genTopicsReady: missing %v, not ready %v", missing, notReady)
	}
	// Existing topics: a second call returns at once without an error.
	if err := genTopicsReady(ctx, cl, time.Second, topics...); err != nil {
		t.Fatalf("second genTopicsReady: %v", err)
	}
}

func TestGenTopicsNotReadyNamesEachTopic(t *testing.T) {
	td := kadm.TopicDetails{
		"ok":   {Topic: "ok", Partitions: kadm.PartitionDetails{0: {Partition: 0, Leader: 1}}},
		"gone": {Topic: "gone", Err: kerr.UnknownTopicOrPartition},
		"leaderless": {Topic: "leaderless", Partitions: kadm.PartitionDetails{
			0: {Partition: 0, Leader: 1}, 1: {Partition: 1, Leader: -1}}},
		"empty": {Topic: "empty", Partitions: kadm.PartitionDetails{}},
	}
	missing, notReady := topicsNotReady(td, []string{"ok", "gone", "leaderless", "empty", "absent"})
	if got := strings.Join(missing, "|"); got != "absent|gone" {
		t.Errorf("missing = %q", got)
	}
	if got := strings.Join(notReady, "|"); got != "empty has no partitions yet|leaderless partition 1 has no leader yet" {
		t.Errorf("not ready = %q", got)
	}
}
