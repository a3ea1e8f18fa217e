package testharness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Limits and settings of the harness's Apache Kafka cluster.
const (
	// clusterStopGrace is how long a controlled shutdown (Stop) may take:
	// the broker first hands its partitions' leadership to the others and
	// waits for the controller's answer, seconds on a loaded machine.
	clusterStopGrace = 60 * time.Second
	// ClusterSessionTimeout is broker.session.timeout.ms of the cluster's
	// nodes (9 s by default): how long the controller waits for a killed
	// broker's heartbeats before it fences it and elects new leaders for
	// its partitions. Shorter, a test sees the election sooner; not much
	// shorter, or a JVM paused on a loaded 2-core machine is fenced too.
	ClusterSessionTimeout = 4 * time.Second
	// ClusterReplication and ClusterMinISR are the replication factor and
	// min.insync.replicas of the cluster's internal topics (consumer
	// offsets, transactions). The brokers' defaults for other topics stay
	// Kafka's (default.replication.factor 1, min.insync.replicas 1), so a
	// test sees what the code under test asked for, not the broker's.
	ClusterReplication = 3
	ClusterMinISR      = 2
)

// ApacheCluster is an Apache Kafka cluster of several KRaft nodes on
// loopback, each a JVM with broker and controller in one process, the
// controllers a static quorum of all the nodes (controller.quorum.voters).
// It is started from the same jars, config and readiness check as
// StartApacheKafka's single broker. Its Kafka's Brokers (and Client) are
// every node's plaintext listener, so a client survives the loss of any
// one. Kafka.Compact is not supported on a cluster.
type ApacheCluster struct {
	*Kafka
	cfg   brokerConfig
	mu    sync.Mutex
	nodes []*apacheBroker // nodes[i] has node id i+1
}

// StartApacheCluster starts an n-node Apache Kafka cluster (KRaft; node
// ids 1..n, every node broker and controller) and stops it when the test
// ends. Options mean what they mean to StartBroker (WithSASL is not
// supported). Internal topics are replicated ClusterReplication times
// (at most n) with min.insync.replicas ClusterMinISR; a killed node is
// fenced after ClusterSessionTimeout. Without Apache Kafka it skips or
// fails as StartApacheKafka does.
func StartApacheCluster(t testing.TB, n int, opts ...BrokerOpt) *ApacheCluster {
	t.Helper()
	c := &ApacheCluster{}
	for _, o := range opts {
		o(&c.cfg)
	}
	if len(c.cfg.sasl) > 0 {
		t.Fatal("testharness: StartApacheCluster does not support WithSASL")
	}
	if n < 1 {
		t.Fatalf("testharness: StartApacheCluster: %d nodes", n)
	}
	require, err := requireApache(os.Getenv)
	if err != nil {
		t.Fatalf("testharness: %v", err)
	}
	t0 := time.Now()
	if err := c.launch(n); err != nil {
		if errors.Is(err, errNoApache) && !require {
			t.Skipf("testharness: Apache Kafka: %v (set %s=1 to make this a failure)", err, EnvRequireApacheKafka)
		}
		t.Fatalf("testharness: Apache Kafka cluster: %v", err)
	}
	t.Cleanup(func() {
		for _, b := range c.nodes {
			if err := b.Stop(); err != nil {
				t.Errorf("testharness: %v", err)
			}
		}
	})
	var addrs []string
	for _, b := range c.nodes {
		addrs = append(addrs, b.addr(b.plainPort))
	}
	c.Kafka = &Kafka{Kind: KindApache, Version: c.nodes[0].version, Brokers: addrs, adminBrokers: addrs}
	// Every node must be in the metadata, and the consumer offsets topic
	// replicated, before a test's groups form.
	adm := kadm.NewClient(c.Client(t))
	if !Poll(apacheReadyTimeout, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m, err := adm.BrokerMetadata(ctx)
		return err == nil && len(m.Brokers) == n
	}) {
		t.Fatalf("testharness: Apache Kafka cluster: not every one of %d nodes in the metadata after %v", n, apacheReadyTimeout)
	}
	t.Logf("testharness: Apache Kafka %s cluster of %d nodes ready in %v: %s", c.Version, n, time.Since(t0).Round(time.Millisecond), strings.Join(addrs, ","))
	return c
}

// launch formats and starts n nodes at once (a static quorum needs a
// majority of its voters up to elect a controller) and waits for each.
func (c *ApacheCluster) launch(n int) error {
	java, err := findJava()
	if err != nil {
		return err
	}
	jars, version, err := kafkaJars()
	if err != nil {
		return err
	}
	idb := make([]byte, 16)
	if _, err := rand.Read(idb); err != nil {
		return err
	}
	clusterID := base64.RawURLEncoding.EncodeToString(idb)
	rf := strconv.Itoa(min(ClusterReplication, n))
	isr := strconv.Itoa(min(ClusterMinISR, n))
	props := map[string]string{
		"offsets.topic.replication.factor":                 rf,
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    isr,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            isr,
		"broker.session.timeout.ms":                        strconv.FormatInt(ClusterSessionTimeout.Milliseconds(), 10),
		"broker.heartbeat.interval.ms":                     "500",
	}
	for k, v := range c.cfg.apacheProps {
		props[k] = v
	}
	cfg := c.cfg
	cfg.apacheProps = props
	var voters []string
	for i := 0; i < n; i++ {
		dir, err := os.MkdirTemp("", "fusebox-kafka-cluster-")
		if err != nil {
			return err
		}
		b := &apacheBroker{java: java, jars: jars, version: version, dir: dir, nodeID: i + 1}
		c.nodes = append(c.nodes, b)
		for _, p := range []*int{&b.plainPort, &b.saslPort, &b.ctrlPort} {
			if *p, err = freeLoopbackPort(); err != nil {
				return c.abort(err)
			}
		}
		voters = append(voters, fmt.Sprintf("%d@%s", b.id(), b.addr(b.ctrlPort)))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range c.nodes {
		b.voters = strings.Join(voters, ",")
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.writeConfig(&cfg); err != nil {
				errs[i] = err
				return
			}
			if err := b.formatWithID(&cfg, clusterID); err != nil {
				errs[i] = err
				return
			}
			errs[i] = b.startProcess()
			if errs[i] == nil {
				if err := b.waitReady(); err != nil {
					errs[i] = fmt.Errorf("node %d on %s: %w\n--- its log tail ---\n%s", b.id(), b.addr(b.plainPort), err, b.logTail())
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return c.abort(err)
	}
	return nil
}

func (c *ApacheCluster) abort(err error) error {
	for _, b := range c.nodes {
		_ = b.Stop()
	}
	c.nodes = nil
	return err
}

// NodeIDs are the nodes' ids, 1..n.
func (c *ApacheCluster) NodeIDs() []int32 {
	ids := make([]int32, len(c.nodes))
	for i := range c.nodes {
		ids[i] = int32(i + 1)
	}
	return ids
}

// Addr is node id's plaintext listener, host:port.
func (c *ApacheCluster) Addr(id int32) string {
	b := c.node(id)
	return b.addr(b.plainPort)
}

func (c *ApacheCluster) node(id int32) *apacheBroker {
	if id < 1 || int(id) > len(c.nodes) {
		panic(fmt.Sprintf("testharness: no node %d in a cluster of %d", id, len(c.nodes)))
	}
	return c.nodes[id-1]
}

// Running reports whether node id's process runs.
func (c *ApacheCluster) Running(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node(id).exitedBeforeReady() == nil
}

// Kill sends node id SIGKILL (kill -9: no controlled shutdown, its
// leaderships move only once the controller fences it, after
// ClusterSessionTimeout) and waits for the process to be gone.
func (c *ApacheCluster) Kill(t testing.TB, id int32) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.node(id)
	if b.exitedBeforeReady() != nil {
		t.Fatalf("testharness: kill node %d: not running", id)
	}
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.exited
}

// Stop shuts node id down the controlled way (SIGTERM: it moves its
// leaderships to the other replicas first) and waits for it to exit; it
// fails the test when the node needed SIGKILL after clusterStopGrace.
func (c *ApacheCluster) Stop(t testing.TB, id int32) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.node(id)
	if b.exitedBeforeReady() != nil {
		t.Fatalf("testharness: stop node %d: not running", id)
	}
	if b.stop(clusterStopGrace) {
		t.Fatalf("testharness: node %d did not shut down within %v of SIGTERM: killed\n%s", id, clusterStopGrace, b.logTail())
	}
}

// Restart starts node id again, stopped or killed, with the same node id,
// config, ports and log dir, and waits until it answers metadata listing
// itself. It returns how long that took. It does not wait for the node's
// replicas to catch up: WaitInSync does.
func (c *ApacheCluster) Restart(t testing.TB, id int32) time.Duration {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.node(id)
	if b.exitedBeforeReady() == nil {
		t.Fatalf("testharness: restart node %d: still running", id)
	}
	t0 := time.Now()
	if err := b.startProcess(); err != nil {
		t.Fatalf("testharness: restart node %d: %v", id, err)
	}
	if err := b.waitReady(); err != nil {
		t.Fatalf("testharness: restart node %d: %v\n--- its log tail ---\n%s", id, err, b.logTail())
	}
	return time.Since(t0)
}

// LeaderOf returns the node leading topic's partition, as the metadata
// of a running node says now (-1 for none); it fails the test when the
// metadata cannot be had within 10 s.
func (c *ApacheCluster) LeaderOf(t testing.TB, topic string, partition int32) int32 {
	t.Helper()
	p, ok := c.partitions(t, topic)[partition]
	if !ok {
		t.Fatalf("testharness: %s has no partition %d", topic, partition)
	}
	return p.Leader
}

// Leaders returns the leader of every partition of topic (-1 for none),
// as LeaderOf does.
func (c *ApacheCluster) Leaders(t testing.TB, topic string) map[int32]int32 {
	t.Helper()
	out := map[int32]int32{}
	for p, d := range c.partitions(t, topic) {
		out[p] = d.Leader
	}
	return out
}

// partitions describes topic's partitions.
func (c *ApacheCluster) partitions(t testing.TB, topic string) kadm.PartitionDetails {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, topic)
	if err == nil {
		err = td.Error()
	}
	if err != nil {
		t.Fatalf("testharness: metadata of %s: %v", topic, err)
	}
	return td[topic].Partitions
}

// OutOfSync lists the partitions of topics whose in-sync replicas are
// fewer than their replicas, or that have no leader, as "topic[p] isr
// [..] of [..]"; empty when every replica is in sync.
func (c *ApacheCluster) OutOfSync(t testing.TB, topics ...string) []string {
	t.Helper()
	var out []string
	for _, topic := range topics {
		for _, p := range c.partitions(t, topic).Sorted() {
			if p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
				out = append(out, fmt.Sprintf("%s[%d] leader %d isr %v of %v", topic, p.Partition, p.Leader, p.ISR, p.Replicas))
			}
		}
	}
	return out
}

// WaitInSync waits until every replica of every partition of topics is in
// sync (a restarted node has caught up), as a rolling restart does
// before it takes the next node down, and returns how long it took; it
// fails the test after timeout.
func (c *ApacheCluster) WaitInSync(t testing.TB, timeout time.Duration, topics ...string) time.Duration {
	t.Helper()
	var last []string
	start := time.Now()
	if !Poll(timeout, func() bool { last = c.OutOfSync(t, topics...); return len(last) == 0 }) {
		t.Fatalf("testharness: replicas still out of sync after %v: %v", timeout, last)
	}
	return time.Since(start)
}

// CreateTopic creates topic with partitions, replicationFactor replicas
// and configs (nil for none), and fails the test on error.
func (c *ApacheCluster) CreateTopic(t testing.TB, topic string, partitions int32, replicationFactor int16, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, replicationFactor, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("testharness: create topic %s: %v (%s)", topic, err, resp.ErrMessage)
	}
}

// LogTail is the end of node id's log, for failure messages.
func (c *ApacheCluster) LogTail(id int32) string { return c.node(id).logTail() }

// ClusterClientOpts are kgo options for a client that follows leader moves
// quickly: metadata at most 1 s old.
func ClusterClientOpts() []kgo.Opt {
	return []kgo.Opt{kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(time.Second)}
}
