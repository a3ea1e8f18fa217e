package testharness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Limits of the harness's Apache Kafka broker.
const (
	// apacheReadyTimeout bounds format + start + the first metadata answer.
	// A warm start takes a few seconds; the margin is for a loaded 2-core
	// machine.
	apacheReadyTimeout = 120 * time.Second
	// apacheStopGrace is how long the broker gets after SIGTERM: the test
	// is over and its data is thrown away, so a clean shutdown is not
	// waited for long.
	apacheStopGrace = 5 * time.Second
	// apacheHeap is the JVM's -Xmx: a test broker holds little.
	apacheHeap = "512m"
)

// StartApacheKafka starts a single-node Apache Kafka broker (KRaft, broker
// and controller in one JVM) whatever FUSEBOX_KAFKA says; see StartBroker.
func StartApacheKafka(t testing.TB, opts ...BrokerOpt) *Kafka {
	t.Helper()
	var c brokerConfig
	for _, o := range opts {
		o(&c)
	}
	return startApache(t, &c)
}

// startApache starts the broker for one test:
//
//  1. the jars of org.apache.kafka:kafka_2.13 (testing/kafka/pom.xml) from
//     the Maven-filled cache (kafkaJars);
//  2. server.properties in a temporary directory: listeners on free
//     loopback ports (PLAINTEXT, SASL_PLAINTEXT when the test has SASL
//     users, CONTROLLER), the log dir beside it, single-node replication
//     factors, a fast log cleaner;
//  3. the storage formatted by kafka.tools.StorageTool (--standalone, a
//     random cluster id, SCRAM credentials);
//  4. kafka.Kafka started, and awaited until a metadata request answers
//     with the broker.
//
// The broker is stopped and its directory removed when the test ends.
// Without java, or without both the cached jars and mvn, the test skips
// with the reason, or fails when FUSEBOX_REQUIRE_APACHE_KAFKA is true.
func startApache(t testing.TB, c *brokerConfig) *Kafka {
	t.Helper()
	require, err := requireApache(os.Getenv)
	if err != nil {
		t.Fatalf("testharness: %v", err)
	}
	b, err := launchApache(c)
	if err != nil {
		if errors.Is(err, errNoApache) && !require {
			t.Skipf("testharness: Apache Kafka: %v (set %s=1 to make this a failure)", err, EnvRequireApacheKafka)
		}
		t.Fatalf("testharness: Apache Kafka: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("testharness: %v", err)
		}
	})
	k := &Kafka{Kind: KindApache, Version: b.version, apache: b,
		Brokers: []string{b.addr(b.plainPort)}, adminBrokers: []string{b.addr(b.plainPort)}}
	if len(c.sasl) > 0 {
		k.Brokers = []string{b.addr(b.saslPort)}
	}
	return k
}

// apacheBroker is one kafka.Kafka JVM with its config, storage and logs in
// one temporary directory.
type apacheBroker struct {
	java, jars, version, dir      string
	plainPort, saslPort, ctrlPort int
	serverProcess
	startedIn time.Duration
	// nodeID is node.id (0 means 1, the single broker's). voters, when
	// set, is controller.quorum.voters of a static quorum (a cluster,
	// kafka_apache_cluster.go); else the node is a standalone controller.
	nodeID int
	voters string
}

// id is the node's node.id.
func (b *apacheBroker) id() int {
	if b.nodeID == 0 {
		return 1
	}
	return b.nodeID
}

func (b *apacheBroker) addr(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// StartedIn is how long format + start + ready took.
func (k *Kafka) StartedIn() time.Duration {
	if k.apache == nil {
		return 0
	}
	return k.apache.startedIn
}

func launchApache(c *brokerConfig) (*apacheBroker, error) {
	t0 := time.Now()
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	jars, version, err := kafkaJars()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 1; attempt <= localStartAttempts; attempt++ {
		b, err := launchApacheOnce(c, java, jars, version)
		if err == nil {
			b.startedIn = time.Since(t0)
			return b, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

func launchApacheOnce(c *brokerConfig, java, jars, version string) (*apacheBroker, error) {
	dir, err := os.MkdirTemp("", "fusebox-kafka-")
	if err != nil {
		return nil, err
	}
	b := &apacheBroker{java: java, jars: jars, version: version, dir: dir}
	for _, p := range []*int{&b.plainPort, &b.saslPort, &b.ctrlPort} {
		if *p, err = freeLoopbackPort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := b.writeConfig(c); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := b.format(c); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := b.startProcess(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := b.waitReady(); err != nil {
		tail := b.logTail()
		_ = b.Stop()
		return nil, fmt.Errorf("broker on %s: %w\n--- broker log tail ---\n%s", b.addr(b.plainPort), err, tail)
	}
	return b, nil
}

// jvmArgs are the JVM flags of both runs: a small heap, the serial
// collector and C1 only, which start a JVM fastest on a small machine.
func (b *apacheBroker) jvmArgs() []string {
	return []string{"-Xmx" + apacheHeap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(b.dir, "log4j2.properties"),
		"-Dkafka.logs.dir=" + filepath.Join(b.dir, "logs"),
		"-cp", filepath.Join(b.jars, "*")}
}

func (b *apacheBroker) writeConfig(c *brokerConfig) error {
	for _, sub := range []string{"data", "logs"} {
		if err := os.MkdirAll(filepath.Join(b.dir, sub), 0o755); err != nil {
			return err
		}
	}
	listeners := []string{"PLAINTEXT://" + b.addr(b.plainPort), "CONTROLLER://" + b.addr(b.ctrlPort)}
	advertised := []string{"PLAINTEXT://" + b.addr(b.plainPort)}
	if len(c.sasl) > 0 {
		listeners = append(listeners, "SASL_PLAINTEXT://"+b.addr(b.saslPort))
		advertised = append(advertised, "SASL_PLAINTEXT://"+b.addr(b.saslPort))
	}
	props := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          strconv.Itoa(b.id()),
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"listeners":                                        strings.Join(listeners, ","),
		"advertised.listeners":                             strings.Join(advertised, ","),
		"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"log.dirs":                                         filepath.Join(b.dir, "data"),
		"num.partitions":                                   "6", // as kfake's DefaultNumPartitions in StartKafka
		"auto.create.topics.enable":                        "true",
		"offsets.topic.replication.factor":                 "1",
		"offsets.topic.num.partitions":                     "6", // 50 by default: slow to create on first join
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"transaction.state.log.num.partitions":             "2",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		"group.initial.rebalance.delay.ms":                 "0",
		// The cleaner looks for dirty compacted logs every 15 s by default;
		// tests of compaction would wait that long per pass.
		"log.cleaner.backoff.ms":      "100",
		"log.flush.interval.messages": "9223372036854775807",
		// The tests' producers live in simulated time (event times from
		// 2027, each record stamped with its simulated producer's clock,
		// as fusebox judges event time against the record timestamp).
		// Kafka 4 refuses a create-time more than 1 h ahead of the broker
		// (log.message.timestamp.after.max.ms, default 3,600,000 since
		// 4.0) with INVALID_TIMESTAMP; kfake has no such check.
		"log.message.timestamp.after.max.ms": "9223372036854775807",
		// ... and in the past: the replayed traffic is stamped in 2023.
		// With the default 7-day time retention the broker's first
		// retention pass, 30 s after it starts, deleted every source
		// record not yet read (the log start jumped to the end; the
		// router got OFFSET_OUT_OF_RANGE and resumed past the gap), and a
		// test running that long wrote short verdicts: it failed the
		// rolling-restart test on Apache Kafka once in two runs. kfake
		// deletes nothing by time.
		"log.retention.ms": "-1",
	}
	if b.voters != "" {
		props["controller.quorum.voters"] = b.voters
	} else {
		props["controller.quorum.bootstrap.servers"] = b.addr(b.ctrlPort)
	}
	if c.minSessionTimeout > 0 {
		props["group.min.session.timeout.ms"] = strconv.FormatInt(c.minSessionTimeout.Milliseconds(), 10)
	}
	if len(c.sasl) > 0 {
		mechs := map[string]bool{}
		var plainUsers []string
		for _, u := range c.sasl {
			mechs[u.Mechanism] = true
			if u.Mechanism == "PLAIN" {
				plainUsers = append(plainUsers, fmt.Sprintf("user_%s=%q", u.User, u.Password))
			}
		}
		var names []string
		for m := range mechs {
			names = append(names, m)
		}
		sort.Strings(names)
		props["sasl.enabled.mechanisms"] = strings.Join(names, ",")
		for _, m := range names {
			key := "listener.name.sasl_plaintext." + strings.ToLower(m) + ".sasl.jaas.config"
			switch m {
			case "PLAIN":
				props[key] = "org.apache.kafka.common.security.plain.PlainLoginModule required " + strings.Join(plainUsers, " ") + ";"
			case "SCRAM-SHA-256", "SCRAM-SHA-512":
				props[key] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
			default:
				return fmt.Errorf("SASL mechanism %q: the harness knows PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", m)
			}
		}
	}
	for k, v := range c.apacheProps {
		props[k] = v
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%s\n", k, props[k])
	}
	if err := os.WriteFile(filepath.Join(b.dir, "server.properties"), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	log4j := "status = warn\n" +
		"appender.file.type = File\nappender.file.name = FILE\nappender.file.fileName = " + filepath.Join(b.dir, "logs", "server.log") + "\n" +
		"appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = [%d] %p %m (%c)%n\n" +
		"rootLogger.level = WARN\nrootLogger.appenderRef.file.ref = FILE\n" +
		// The broker's start and stop lines, so a log tail shows how far it got.
		"logger.server.name = kafka.server.KafkaRaftServer\nlogger.server.level = INFO\n"
	return os.WriteFile(filepath.Join(b.dir, "log4j2.properties"), []byte(log4j), 0o644)
}

// format runs kafka.tools.StorageTool format --standalone with a random
// cluster id and the SCRAM users' credentials.
func (b *apacheBroker) format(c *brokerConfig) error {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	return b.formatWithID(c, base64.RawURLEncoding.EncodeToString(id))
}

// formatWithID formats the storage with cluster id (22 characters of
// base64url).
func (b *apacheBroker) formatWithID(c *brokerConfig, id string) error {
	// "=": a random id may start with "-", which the tool's argument
	// parser would take for an option.
	args := append(b.jvmArgs(), "kafka.tools.StorageTool", "format", "--ignore-formatted",
		"--cluster-id="+id, "--config="+filepath.Join(b.dir, "server.properties"))
	if b.voters == "" {
		// A single node is its own quorum; a static quorum's voters are
		// in the config (controller.quorum.voters).
		args = append(args, "--standalone")
	}
	for _, u := range c.sasl {
		if strings.HasPrefix(u.Mechanism, "SCRAM-") {
			args = append(args, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", u.Mechanism, u.User, u.Password))
		}
	}
	cmd := exec.Command(b.java, args...)
	cmd.Dir = b.dir
	ctx, cancel := context.WithTimeout(context.Background(), apacheReadyTimeout)
	defer cancel()
	cmd = exec.CommandContext(ctx, b.java, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kafka.tools.StorageTool format: %w\n%s", err, tailLines(string(out), logTailLines))
	}
	return nil
}

// startProcess starts kafka.Kafka, its stdout and stderr in logs/console.log,
// with Pdeathsig (see serverProcess.start).
func (b *apacheBroker) startProcess() error {
	cmd := exec.Command(b.java, append(b.jvmArgs(), "kafka.Kafka", filepath.Join(b.dir, "server.properties"))...)
	cmd.Dir = b.dir
	if err := b.start(cmd, filepath.Join(b.dir, "logs", "console.log")); err != nil {
		return fmt.Errorf("kafka.Kafka: %w", err)
	}
	return nil
}

// waitReady polls a metadata request on the plaintext listener until the
// broker lists itself (its node id) and has a controller.
func (b *apacheBroker) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), apacheReadyTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr(b.plainPort)), kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last error
	for {
		if err := b.exitedBeforeReady(); err != nil {
			return err
		}
		mctx, mcancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := adm.BrokerMetadata(mctx)
		mcancel()
		if err == nil && m.Controller >= 0 && slices.ContainsFunc(m.Brokers, func(bm kadm.BrokerDetail) bool { return int(bm.NodeID) == b.id() }) {
			return nil
		}
		if err == nil {
			err = errors.New("no broker or controller in the metadata yet")
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", apacheReadyTimeout, last)
		case <-b.exited:
			return fmt.Errorf("exited before it was ready (%v)", b.waitErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM, waits apacheStopGrace, then SIGKILL, and removes the
// directory. It is safe to call more than once.
func (b *apacheBroker) Stop() error {
	b.stop(apacheStopGrace)
	if err := os.RemoveAll(b.dir); err != nil {
		return fmt.Errorf("apache kafka: remove %s: %w", b.dir, err)
	}
	return nil
}

// logTail returns the end of the broker's log and console output.
func (b *apacheBroker) logTail() string {
	var sb strings.Builder
	for _, name := range []string{"server.log", "console.log"} {
		data, err := os.ReadFile(filepath.Join(b.dir, "logs", name))
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "[%s]\n%s\n", name, tailLines(string(data), logTailLines))
	}
	if sb.Len() == 0 {
		return "(no log output)"
	}
	return sb.String()
}

// activeSegmentBase is the base offset of the active segment of a
// partition: the largest NNN of the NNN.log files in its log directory.
func (b *apacheBroker) activeSegmentBase(topic string, partition int32) (int64, error) {
	dir := filepath.Join(b.dir, "data", topic+"-"+strconv.Itoa(int(partition)))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("segments of %s[%d]: %w", topic, partition, err)
	}
	base := int64(-1)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(name, 10, 64); err == nil && n > base {
			base = n
		}
	}
	if base < 0 {
		return 0, fmt.Errorf("segments of %s[%d]: no .log file in %s", topic, partition, dir)
	}
	return base, nil
}
