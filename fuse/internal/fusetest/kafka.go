package fusetest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka is a kfake cluster listening on a free loopback port. The fuse
// package starts its own rather than the product's test harness so that the
// fuse module depends on nothing of the fusebox module.
type Kafka struct {
	Cluster *kfake.Cluster
	// Brokers are the seed addresses, "127.0.0.1:PORT".
	Brokers []string
}

// StartKafka starts a one-broker kfake cluster with topic auto-creation (6
// partitions by default) and closes it when the test ends.
func StartKafka(t testing.TB) *Kafka {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(6))
	if err != nil {
		t.Fatalf("fusetest: start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &Kafka{Cluster: c, Brokers: c.ListenAddrs()}
}

// client returns a franz-go client for the cluster, closed when the test
// ends.
func (k *Kafka) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Brokers...)}, opts...)...)
	if err != nil {
		t.Fatalf("fusetest: kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce writes records synchronously and fails the test on error.
func (k *Kafka) Produce(t testing.TB, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.client(t, kgo.AllowAutoTopicCreation()).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("fusetest: produce: %v", err)
	}
}

// CreateTopic creates a topic with the given partitions and configs (nil
// for none) and fails the test on error.
func (k *Kafka) CreateTopic(t testing.TB, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(k.client(t)).CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("fusetest: create topic %s: %v", topic, err)
	}
}

// ReadAll consumes topic from the start (without a group) until it has
// seen want records or the timeout passes, then reads on for another
// 300 ms so that records beyond want already in the topic are returned
// too; it returns what it saw.
func (k *Kafka) ReadAll(t testing.TB, topic string, want int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	cl := k.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Errorf("fusetest: fetch %s[%d]: %v", tp, p, err)
		})
		out = append(out, fs.Records()...)
	}
	settle, cancelSettle := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelSettle()
	for {
		fs := cl.PollFetches(settle)
		if settle.Err() != nil {
			return out
		}
		out = append(out, fs.Records()...)
	}
}

// Compact compacts every topic of the cluster now (kfake compacts only
// when asked); topic names the one the caller needs compacted.
func (k *Kafka) Compact(t testing.TB, topic string) {
	t.Helper()
	k.Cluster.Compact()
}
