package testharness

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/broker"
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
// the test ends. The cluster is internal/broker's (see kfakeConfig), so the
// broker the tests use is the one `fusebox broker` and the demo run.
func StartKafka(t testing.TB, opts ...kfake.Opt) *Kafka {
	t.Helper()
	return startKfake(t, kfakeConfig(), opts...)
}

// kfakeConfig is the internal/broker configuration of the tests' kfake: a
// free loopback port, topics created on first use with 6 partitions, no
// log.
func kfakeConfig() broker.Config {
	return broker.Config{
		Listen:           "127.0.0.1:0",
		Partitions:       6,
		AutoCreateTopics: true,
		LogLevel:         "none",
		LogOutput:        io.Discard,
	}
}

// startKfake starts cfg with the extra kfake options and closes it when the
// test ends.
func startKfake(t testing.TB, cfg broker.Config, opts ...kfake.Opt) *Kafka {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.StartWithKfakeOpts(ctx, cfg, opts...)
	if err != nil {
		t.Fatalf("testharness: start kfake: %v", err)
	}
	t.Cleanup(b.Close)
	c := b.Cluster()
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

// MaxMessageBytes is the topic config (CreateTopic's configs) of a topic
// taking records up to n bytes, past the broker's default
// message.max.bytes (1,048,588 bytes on Apache Kafka), as a team sending
// big batches configures its topic.
func MaxMessageBytes(n int) map[string]*string {
	v := strconv.Itoa(n)
	return map[string]*string{"max.message.bytes": &v}
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

// compactTimeout bounds Compact's wait for Apache Kafka's log cleaner.
const compactTimeout = 60 * time.Second

// Compact compacts the compacted topics. On kfake it compacts every topic
// at once. On Apache Kafka (started WithFastCompaction) the broker's log
// cleaner does it: Compact waits until, in every partition of each topic,
// no key repeats among the records of the closed segments (the cleaner
// never touches the active one; the harness reads which one that is from
// the broker's log directory), and fails the test after compactTimeout.
func (k *Kafka) Compact(t testing.TB, topics ...string) {
	t.Helper()
	if k.Cluster != nil {
		k.Cluster.Compact()
		return
	}
	deadline := time.Now().Add(compactTimeout)
	for _, topic := range topics {
		for {
			dups := k.duplicateKeys(t, topic)
			if dups == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testharness: %s: %d records of closed segments still share a key with a newer one after %v: the log cleaner did not run (start the broker WithFastCompaction)", topic, dups, compactTimeout)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// duplicateKeys counts, over topic's partitions, the records of closed
// segments whose key a newer record of a closed segment repeats.
func (k *Kafka) duplicateKeys(t testing.TB, topic string) int {
	t.Helper()
	recs := k.readToEnd(t, topic, k.listEndOffsets(t, topic))
	byPart := map[int32][]*kgo.Record{}
	for _, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	dups := 0
	for p, rs := range byPart {
		active, err := k.apache.activeSegmentBase(topic, p)
		if err != nil {
			t.Fatalf("testharness: %v", err)
		}
		seen := map[string]bool{}
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i].Offset >= active {
				continue
			}
			key := string(rs[i].Key)
			if seen[key] {
				dups++
			}
			seen[key] = true
		}
	}
	return dups
}

// ReadToEnd reads every partition of topic from its start to the end
// offsets it has when ReadToEnd is called, and returns the records. It waits
// on those offsets, not a fixed time: use it to read everything a stopped
// writer wrote (ReadAll is for records still to come). It fails the test if
// the end offsets cannot be listed or reading takes more than 20 s.
func (k *Kafka) ReadToEnd(t testing.TB, topic string) []*kgo.Record {
	t.Helper()
	return k.readToEnd(t, topic, k.listEndOffsets(t, topic))
}

// EndOffsets returns the end offset of each partition of topic: the
// offset its next record gets. It fails the test if they cannot be listed
// within 10 s, or one partition's cannot.
func (k *Kafka) EndOffsets(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	k.listEndOffsets(t, topic).Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// TopicRecords returns the sum of topic's end offsets: how many records
// were written to it, for a topic written without transactions (no
// control records). It fails the test as EndOffsets does.
func (k *Kafka) TopicRecords(t testing.TB, topic string) int64 {
	t.Helper()
	var n int64
	for _, o := range k.EndOffsets(t, topic) {
		n += o
	}
	return n
}

// listEndOffsets lists topic's end offsets, failing the test on an error
// of the request or of a partition (10 s at the most).
func (k *Kafka) listEndOffsets(t testing.TB, topic string) kadm.ListedOffsets {
	t.Helper()
	adm := kadm.NewClient(k.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("testharness: end offsets of %s: %v", topic, err)
	}
	return ends
}

// readToEnd reads every partition of topic from its start to the given end
// offsets.
func (k *Kafka) readToEnd(t testing.TB, topic string, ends kadm.ListedOffsets) []*kgo.Record {
	t.Helper()
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	if len(left) == 0 {
		return nil
	}
	offs := map[int32]kgo.Offset{}
	for p := range left {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := k.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("testharness: read %s to its end: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
		// A compacted log can end in removed records: the high watermark is
		// reached when the fetch returns nothing more.
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if end, ok := left[p.Partition]; ok && p.HighWatermark <= end && len(p.Records) == 0 {
				delete(left, p.Partition)
			}
		})
	}
	return out
}
