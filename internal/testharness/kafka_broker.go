package testharness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/fusebox-dev/fusebox/internal/broker"
)

// Environment variables that pick the Kafka broker of StartBroker.
const (
	// EnvKafka picks the broker StartBroker starts: "kfake" (the default,
	// in-process) or "apache" (an Apache Kafka broker in a JVM, see
	// StartApacheKafka).
	EnvKafka = "FUSEBOX_KAFKA"
	// EnvRequireApacheKafka, when true ("1", "true"), turns the skip that
	// happens when Apache Kafka cannot be run (no java, no mvn and no
	// cached jars) into a test failure. CI sets it.
	EnvRequireApacheKafka = "FUSEBOX_REQUIRE_APACHE_KAFKA"
)

// Broker kinds, the values of EnvKafka and of Kafka.Kind.
const (
	KindKfake  = "kfake"
	KindApache = "apache"
)

// ConformancePrefix starts the name of every test that takes its broker
// from StartBroker, and of no other: scripts/test runs `go test -run
// '^TestKafka'` over the conformance packages with FUSEBOX_KAFKA=apache, so
// these tests, and only these, run on Apache Kafka as well as on kfake.
// TestConformanceSetFollowsTheConvention checks the names.
const ConformancePrefix = "TestKafka"

// BrokerOpt configures StartBroker. The same options mean the same on both
// brokers, so a test written against StartBroker runs on either.
type BrokerOpt func(*brokerConfig)

// SASLUser is one user a broker with SASL accepts.
type SASLUser struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string
	User      string
	Password  string
}

type brokerConfig struct {
	sasl              []SASLUser
	minSessionTimeout time.Duration
	kfakeOpts         []kfake.Opt
	apacheProps       map[string]string
}

// WithSASL makes the broker's client listener (Kafka.Brokers) require SASL
// and accept the given users. On kfake the users are superusers; on Apache
// Kafka SCRAM users get credentials through the admin API and PLAIN users
// come from the listener's JAAS config. Kafka.Client still connects without
// SASL on Apache Kafka (a second, plaintext listener), not on kfake.
func WithSASL(users ...SASLUser) BrokerOpt {
	return func(c *brokerConfig) { c.sasl = append(c.sasl, users...) }
}

// WithGroupMinSessionTimeout lowers the broker's smallest accepted consumer
// group session timeout (default 6 s on both), for tests that let a
// killed member's session expire quickly.
func WithGroupMinSessionTimeout(d time.Duration) BrokerOpt {
	return func(c *brokerConfig) { c.minSessionTimeout = d }
}

// WithKfakeOpts passes options to kfake; Apache Kafka ignores them. Use it
// only for what has no Apache equivalent the test depends on.
func WithKfakeOpts(opts ...kfake.Opt) BrokerOpt {
	return func(c *brokerConfig) { c.kfakeOpts = append(c.kfakeOpts, opts...) }
}

// WithBrokerProperty sets one server.properties entry of an Apache Kafka
// broker (e.g. "log.cleaner.backoff.ms"); kfake ignores it.
func WithBrokerProperty(key, value string) BrokerOpt {
	return func(c *brokerConfig) {
		if c.apacheProps == nil {
			c.apacheProps = map[string]string{}
		}
		c.apacheProps[key] = value
	}
}

// BrokerKind returns the broker StartBroker starts: EnvKafka, "kfake" when
// unset. An unknown value fails the test.
func BrokerKind(t testing.TB) string {
	t.Helper()
	kind, err := brokerKind(os.Getenv)
	if err != nil {
		t.Fatalf("testharness: %v", err)
	}
	return kind
}

func brokerKind(getenv func(string) string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvKafka))); v {
	case "", KindKfake:
		return KindKfake, nil
	case KindApache:
		return KindApache, nil
	default:
		return "", fmt.Errorf("%s=%q: want %q or %q", EnvKafka, v, KindKfake, KindApache)
	}
}

// requireApache reads EnvRequireApacheKafka.
func requireApache(getenv func(string) string) (bool, error) {
	v := strings.TrimSpace(getenv(EnvRequireApacheKafka))
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q is not a boolean (use 1 or 0)", EnvRequireApacheKafka, v)
	}
	return b, nil
}

// StartBroker starts the broker EnvKafka picks — kfake in-process, or a
// single-node Apache Kafka (StartApacheKafka) — with topic auto-creation
// and 6 partitions per auto-created topic on both, and stops it when the
// test ends. Tests that should hold on every Kafka use it; tests that need
// kfake's hooks (Cluster.ControlKey) use StartKafka.
func StartBroker(t testing.TB, opts ...BrokerOpt) *Kafka {
	t.Helper()
	var c brokerConfig
	for _, o := range opts {
		o(&c)
	}
	if BrokerKind(t) == KindApache {
		return startApache(t, &c)
	}
	cfg := kfakeConfig()
	for _, u := range c.sasl {
		cfg.Users = append(cfg.Users, broker.SASLUser{Mechanism: u.Mechanism, User: u.User, Password: u.Password})
	}
	var kopts []kfake.Opt
	if c.minSessionTimeout > 0 {
		kopts = append(kopts, kfake.GroupMinSessionTimeout(c.minSessionTimeout))
	}
	return startKfake(t, cfg, append(kopts, c.kfakeOpts...)...)
}

// WithFastCompaction makes compaction run within a test on Apache Kafka:
// every produce request after the first starts a new log segment
// (log.roll.ms=1), so all but a partition's last batch is in closed
// segments the cleaner may compact, and the cleaner compacts a log as soon
// as 1% of it is dirty. Compact then waits for it. kfake needs nothing:
// its Compact compacts at once.
func WithFastCompaction() BrokerOpt {
	return func(c *brokerConfig) {
		WithBrokerProperty("log.roll.ms", "1")(c)
		WithBrokerProperty("log.cleaner.min.cleanable.ratio", "0.01")(c)
	}
}
