package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	kafkagoplain "github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testConfig listens on a free loopback port and keeps kfake quiet.
func testConfig() Config {
	c := DefaultConfig()
	c.Listen = "127.0.0.1:0"
	c.LogLevel = "none"
	c.LogOutput = io.Discard
	return c
}

func start(t *testing.T, cfg Config) *Broker {
	t.Helper()
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

func client(t *testing.T, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(b.ClientOpts(), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// readAll consumes topic from the start without a group until it has want
// records or the deadline passes.
func readAll(t *testing.T, b *Broker, topic string, want int) []*kgo.Record {
	t.Helper()
	cl := client(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) {
			if ctx.Err() == nil {
				t.Errorf("fetch %s[%d]: %v", tp, p, err)
			}
		})
		out = append(out, fs.Records()...)
	}
	return out
}

func values(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	sort.Strings(out)
	return out
}

func TestKgoAndKafkaGoInterop(t *testing.T) {
	cfg := testConfig()
	cfg.Topics = []TopicSpec{{Name: "spans", Partitions: 3}, {Name: "back", Partitions: 2}}
	b := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// kafka-go writes, kgo reads.
	w := &kafkago.Writer{Addr: kafkago.TCP(b.Addr()), Topic: "spans", Balancer: &kafkago.Hash{}, BatchTimeout: 10 * time.Millisecond}
	var msgs []kafkago.Message
	var want []string
	for i := 0; i < 30; i++ {
		v := fmt.Sprintf("span-%02d", i)
		msgs = append(msgs, kafkago.Message{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(v)})
		want = append(want, v)
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, b, "spans", 30)
	if strings.Join(values(got), ",") != strings.Join(want, ",") {
		t.Errorf("kgo read %v, want %v", values(got), want)
	}
	parts := map[int32]bool{}
	for _, r := range got {
		parts[r.Partition] = true
	}
	if len(parts) < 2 {
		t.Errorf("30 records over 7 keys landed in %d partition(s) of 3", len(parts))
	}

	// kgo writes, a kafka-go consumer group reads.
	cl := client(t, b)
	var recs []*kgo.Record
	for i := 0; i < 20; i++ {
		recs = append(recs, &kgo.Record{Topic: "back", Key: []byte{byte(i)}, Value: []byte(fmt.Sprintf("cmd-%02d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("kgo produce: %v", err)
	}
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{b.Addr()}, GroupID: "gw", Topic: "back",
		StartOffset: kafkago.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var seen []string
	for len(seen) < 20 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go read after %d: %v", len(seen), err)
		}
		seen = append(seen, string(m.Value))
	}
	sort.Strings(seen)
	if seen[0] != "cmd-00" || seen[19] != "cmd-19" {
		t.Errorf("kafka-go read %v", seen)
	}
}

func TestTopicsCreatedWithPartitionsAndConfigs(t *testing.T) {
	cfg := testConfig()
	cfg.Partitions = 4
	for _, s := range []string{"fusebox.fuse:6:cleanup.policy=compact,min.compaction.lag.ms=0", "fusebox.verdicts:3:retention.ms=604800000", "fusebox.dlq:1"} {
		ts, err := ParseTopicSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Topics = append(cfg.Topics, ts)
	}
	b := start(t, cfg)
	adm := kadm.NewClient(client(t, b))
	ctx := context.Background()

	// A topic created on first use gets --partitions.
	if err := client(t, b, kgo.AllowAutoTopicCreation()).ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	details, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]int{"fusebox.fuse": 6, "fusebox.verdicts": 3, "fusebox.dlq": 1, "auto": 4} {
		if got := len(details[topic].Partitions); got != want {
			t.Errorf("%s has %d partitions, want %d", topic, got, want)
		}
	}
	assertConfigs(t, adm, "fusebox.fuse", map[string]string{"cleanup.policy": "compact", "min.compaction.lag.ms": "0"})
	assertConfigs(t, adm, "fusebox.verdicts", map[string]string{"retention.ms": "604800000"})
}

func assertConfigs(t *testing.T, adm *kadm.Client, topic string, want map[string]string) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatalf("describe configs %s: %v", topic, err)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		if c.Value != nil {
			got[c.Key] = *c.Value
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: config %s = %q, want %q", topic, k, got[k], v)
		}
	}
}

func TestRestartWithDataDirKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.DataDir = dir
	cfg.Topics = []TopicSpec{{Name: "keep", Partitions: 3, Configs: map[string]string{"cleanup.policy": "delete"}}}
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(b.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	var want []string
	for i := 0; i < 100; i++ {
		v := fmt.Sprintf("rec-%03d", i)
		recs = append(recs, &kgo.Record{Topic: "keep", Key: []byte{byte(i)}, Value: []byte(v)})
		want = append(want, v)
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	b.Close()

	// Same data dir; the topic spec asks for more partitions and another
	// policy: the records stay, the topic grows and takes the new config.
	cfg.Topics = []TopicSpec{{Name: "keep", Partitions: 4, Configs: map[string]string{"cleanup.policy": "compact"}}}
	b2 := start(t, cfg)
	got := readAll(t, b2, "keep", 100)
	if strings.Join(values(got), ",") != strings.Join(want, ",") {
		t.Fatalf("after restart read %d records, want the 100 written before", len(got))
	}
	adm := kadm.NewClient(client(t, b2))
	details, err := adm.ListTopics(context.Background(), "keep")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details["keep"].Partitions); n != 4 {
		t.Errorf("after restart keep has %d partitions, want 4", n)
	}
	assertConfigs(t, adm, "keep", map[string]string{"cleanup.policy": "compact"})
	b2.Close()

	// Shrinking is refused, naming the flag.
	cfg.Topics = []TopicSpec{{Name: "keep", Partitions: 2}}
	_, err = Start(context.Background(), cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Flag != "--topic" || !strings.Contains(err.Error(), "cannot shrink") {
		t.Errorf("restart with fewer partitions: err = %v, want a --topic error saying partitions cannot shrink", err)
	}
}

// syncBuffer is a log destination the broker's goroutines may write to
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSASLUsers(t *testing.T) {
	cfg := testConfig()
	log := &syncBuffer{}
	cfg.LogLevel, cfg.LogOutput = "warn", log
	for _, s := range []string{"PLAIN:alice:pw-a", "scram-sha-256:bob:pw-b", "SCRAM-SHA-512:carol:pw:with:colons"} {
		u, err := ParseSASLUser(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Users = append(cfg.Users, u)
	}
	cfg.Topics = []TopicSpec{{Name: "secure", Partitions: 1}}
	b := start(t, cfg)

	produce := func(opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(1)}, opts...)...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "secure", Value: []byte("v")}).FirstErr()
	}
	// kfake refuses a wrong password by closing the connection (Apache
	// Kafka answers SASL_AUTHENTICATION_FAILED first), so franz-go sees
	// EOF; Ping returns it at once where a produce would retry until its
	// deadline. The broker's log names the failure.
	ping := func(opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr())}, opts...)...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	for _, u := range cfg.Users {
		t.Run(u.Mechanism, func(t *testing.T) {
			if err := produce(kgo.SASL(Mechanism(u))); err != nil {
				t.Errorf("%s with the right password: %v", u.User, err)
			}
			wrong := u
			wrong.Password = "not-" + u.Password
			before := strings.Count(log.String(), "SASL authentication failed for client")
			err := ping(kgo.SASL(Mechanism(wrong)))
			if err == nil {
				t.Fatalf("%s with a wrong password was let in", u.User)
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Errorf("%s with a wrong password: err = %v, want EOF (kfake) or SASL_AUTHENTICATION_FAILED", u.User, err)
			}
			if after := strings.Count(log.String(), "SASL authentication failed for client"); after <= before {
				t.Errorf("broker log does not name the failed authentication:\n%s", log.String())
			}
		})
	}
	t.Run("kafka-go PLAIN", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		dial := func(pass string) error {
			d := &kafkago.Dialer{Timeout: 5 * time.Second, SASLMechanism: kafkagoplain.Mechanism{Username: "alice", Password: pass}}
			c, err := d.DialContext(ctx, "tcp", b.Addr())
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.ReadPartitions("secure")
			return err
		}
		if err := dial("pw-a"); err != nil {
			t.Errorf("right password: %v", err)
		}
		err := dial("wrong")
		if !errors.Is(err, kafkago.SASLAuthenticationFailed) {
			t.Errorf("wrong password: err = %v, want SASL authentication failed", err)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := cl.Ping(ctx); err == nil {
			t.Error("a client without SASL reached a broker that requires it")
		}
	})
}

func TestListenHonoursHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 is a loopback address only on Linux")
	}
	cfg := testConfig()
	cfg.Listen = "127.0.0.2:0"
	b := start(t, cfg)
	host, _, err := net.SplitHostPort(b.Addr())
	if err != nil || host != "127.0.0.2" {
		t.Fatalf("Addr = %s, want 127.0.0.2:PORT", b.Addr())
	}
	// The advertised address is the one clients are sent to after the seed.
	cl := client(t, b, kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "h", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, b, "h", 1); len(got) != 1 {
		t.Fatalf("read %d records", len(got))
	}
}

func TestListenPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := testConfig()
	cfg.Listen = ln.Addr().String()
	_, err = Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Start on a taken port: err = %v, want one naming %s", err, ln.Addr())
	}
}
