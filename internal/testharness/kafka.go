package testharness

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka is a broker listening on free loopback ports: a kfake cluster
// (StartKafka, or StartBroker by default) or an Apache Kafka broker
// (StartBroker with FUSEBOX_KAFKA=apache).
type Kafka struct {
	// Cluster is the kfake cluster; nil on Apache Kafka.
	Cluster *kfake.Cluster
	// Brokers are the seed addresses the code under test uses,
	// "127.0.0.1:PORT" (the SASL listener when the broker has SASL users).
	Brokers []string
	// Kind is KindKfake or KindApache.
	Kind string
	// Version is Apache Kafka's version ("4.1.0"), "" on kfake.
	Version string

	// adminBrokers is a listener without SASL for the harness's own
	// clients (Apache Kafka only; nil means Brokers).
	adminBrokers []string
	// apache is the broker process (Apache Kafka only).
	apache *apacheBroker
}

// StartKafka starts a one-broker kfake cluster with topic auto-creation
// (6 partitions by default) and the extra options given, and closes it when
// the test ends.
func StartKafka(t testing.TB, opts ...kfake.Opt) *Kafka {
	t.Helper()
	base := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(6),
	}
	c, err := kfake.NewCluster(append(base, opts...)...)
	if err != nil {
		t.Fatalf("testharness: start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &Kafka{Cluster: c, Brokers: c.ListenAddrs(), Kind: KindKfake}
}

// Client returns a franz-go client for the cluster, closed when the test
// ends.
func (k *Kafka) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	seeds := k.Brokers
	if k.adminBrokers != nil {
		seeds = k.adminBrokers
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("testharness: kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce writes records synchronously and fails the test on error.
func (k *Kafka) Produce(t testing.TB, recs ...*kgo.Record) {
	t.Helper()
	cl := k.Client(t, kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("testharness: produce: %v", err)
	}
}

// CreateTopic creates a topic with the given partitions and configs (nil for
// none) and fails the test on error.
func (k *Kafka) CreateTopic(t testing.TB, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(k.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("testharness: create topic %s: %v", topic, err)
	}
}

// ReadAll consumes topic from the start (without a group) until it has seen
// want records or the timeout passes, then reads on for another
// readAllSettle, so that records beyond want already in the topic (a
// duplicate the test must see) are returned too; it returns what it saw.
func (k *Kafka) ReadAll(t testing.TB, topic string, want int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	cl := k.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
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
			t.Errorf("testharness: fetch %s[%d]: %v", tp, p, err)
		})
		out = append(out, fs.Records()...)
	}
	settle, cancelSettle := context.WithTimeout(context.Background(), readAllSettle)
	defer cancelSettle()
	for {
		fs := cl.PollFetches(settle)
		if settle.Err() != nil {
			return out
		}
		out = append(out, fs.Records()...)
	}
}

// readAllSettle is how long ReadAll keeps reading after it has what it was
// asked for: the records it looks for are already written, so a fetch or
// two brings any extra ones.
const readAllSettle = 300 * time.Millisecond
