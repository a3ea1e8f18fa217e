package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// setupTimeout bounds the creation of Config.Topics at start.
const setupTimeout = 30 * time.Second

// Broker is a running kfake broker.
type Broker struct {
	cluster *kfake.Cluster
	addr    string
	cfg     Config
}

// Start validates cfg, listens on cfg.Listen, loads cfg.DataDir if it holds a
// previous run's state, and creates cfg.Topics. It returns once clients can
// connect. On error nothing is left listening. Close the Broker to stop it.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	return startKfake(ctx, cfg, nil)
}

func startKfake(ctx context.Context, cfg Config, extra []kfake.Opt) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	level, _ := ParseLogLevel(cfg.LogLevel)
	out := cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	listen := cfg.Listen
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ClusterID("fusebox"),
		// kfake always asks for 127.0.0.1:PORT; listening on the configured
		// address instead makes --listen's host count.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, listen) }),
		kfake.DefaultNumPartitions(cfg.Partitions),
		kfake.WithLogger(authFailureLogger{kfake.BasicLogger(out, level)}),
	}
	if cfg.AutoCreateTopics {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
		if cfg.SyncWrites {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	if len(cfg.Users) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, u := range cfg.Users {
			if acls, ok := cfg.ACLs[u.User]; ok {
				opts = append(opts, kfake.User(u.Mechanism, u.User, u.Password, acls...))
			} else {
				opts = append(opts, kfake.Superuser(u.Mechanism, u.User, u.Password))
			}
		}
		if len(cfg.ACLs) > 0 {
			opts = append(opts, kfake.EnableACLs())
		}
	}
	c, err := kfake.NewCluster(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("broker: listen on %s: %w", cfg.Listen, err)
	}
	b := &Broker{cluster: c, addr: c.ListenAddrs()[0], cfg: cfg}
	if err := b.createTopics(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return b, nil
}

// Addr is the address the broker listens on and advertises, host:port.
func (b *Broker) Addr() string { return b.addr }

// Cluster is the underlying kfake cluster, for tests and the demo (e.g.
// Cluster().Compact()).
func (b *Broker) Cluster() *kfake.Cluster { return b.cluster }

// Close stops the broker; with a data dir it first writes its state there.
// Connected clients see their connections close.
func (b *Broker) Close() { b.cluster.Close() }

// ClientOpts are franz-go options that connect to this broker, authenticating
// as the first configured SASL user if there is one (with ACLs, make it a
// superuser: Start creates Config.Topics of an existing data dir as it).
func (b *Broker) ClientOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(b.addr)}
	if len(b.cfg.Users) > 0 {
		opts = append(opts, kgo.SASL(Mechanism(b.cfg.Users[0])))
	}
	return opts
}

// Mechanism is the franz-go SASL mechanism that authenticates as u.
func Mechanism(u SASLUser) sasl.Mechanism {
	switch u.Mechanism {
	case MechScramSHA256:
		return scram.Auth{User: u.User, Pass: u.Password}.AsSha256Mechanism()
	case MechScramSHA512:
		return scram.Auth{User: u.User, Pass: u.Password}.AsSha512Mechanism()
	default:
		return plain.Auth{User: u.User, Pass: u.Password}.AsMechanism()
	}
}

// createTopics creates cfg.Topics. A topic that already exists (reloaded from
// the data dir) gets its configs set and is grown to the partitions asked
// for; asking for fewer partitions than it has is an error.
func (b *Broker) createTopics(ctx context.Context) error {
	var existing []TopicSpec
	for _, t := range b.cfg.Topics {
		if b.cluster.TopicInfo(t.Name) != nil {
			existing = append(existing, t)
			continue
		}
		if err := b.cluster.CreateTopic(t.Name, t.Partitions, t.Configs); err != nil {
			return fmt.Errorf("broker: create topic %s: %w", t.Name, err)
		}
	}
	if len(existing) == 0 {
		return nil
	}
	// Growing partitions and altering configs go through the admin API,
	// as the first SASL user (all users are superusers).
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	cl, err := kgo.NewClient(b.ClientOpts()...)
	if err != nil {
		return fmt.Errorf("broker: admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range existing {
		if err := b.updateTopic(ctx, adm, t); err != nil {
			return err
		}
	}
	return nil
}

func (b *Broker) updateTopic(ctx context.Context, adm *kadm.Client, t TopicSpec) error {
	details, err := adm.ListTopics(ctx, t.Name)
	if err != nil {
		return fmt.Errorf("broker: describe existing topic %s: %w", t.Name, err)
	}
	have := int32(len(details[t.Name].Partitions))
	switch {
	case have > t.Partitions:
		return &ConfigError{Flag: "--topic", Value: fmt.Sprintf("%s:%d", t.Name, t.Partitions),
			Reason: fmt.Sprintf("topic already has %d partitions in the data dir; partitions cannot shrink", have)}
	case have < t.Partitions:
		resp, err := adm.UpdatePartitions(ctx, int(t.Partitions), t.Name)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("broker: grow topic %s to %d partitions: %w", t.Name, t.Partitions, err)
		}
	}
	if len(t.Configs) == 0 {
		return nil
	}
	keys := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	alter := make([]kadm.AlterConfig, 0, len(keys))
	for _, k := range keys {
		v := t.Configs[k]
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	resps, err := adm.AlterTopicConfigs(ctx, alter, t.Name)
	if err == nil {
		for _, r := range resps {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		return fmt.Errorf("broker: set configs of existing topic %s: %w", t.Name, err)
	}
	return nil
}

// authFailureLogger raises kfake's info-level "invalid sasl" line to a warning
// that says what happened. kfake answers a failed SASL authentication by
// closing the connection (Apache Kafka sends SASL_AUTHENTICATION_FAILED
// first), so franz-go clients see only EOF; the broker's log is where the
// reason shows.
type authFailureLogger struct{ kfake.Logger }

func (l authFailureLogger) Logf(level kfake.LogLevel, msg string, args ...any) {
	if level == kfake.LogLevelInfo && msg == "client %s request unable to be handled: %v" && len(args) == 2 {
		if err, ok := args[1].(error); ok && isAuthFailure(err) {
			l.Logger.Logf(kfake.LogLevelWarn, "SASL authentication failed for client %s: %v "+
				"(wrong or missing user, password or mechanism); connection closed", args...)
			return
		}
	}
	l.Logger.Logf(level, msg, args...)
}

// kfakeAuthErrors are fragments of the errors kfake's SASL handlers return.
var kfakeAuthErrors = []string{"sasl", "password", "plain auth", "authzid", "client0", "client-final", "client proof"}

func isAuthFailure(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, frag := range kfakeAuthErrors {
		if strings.Contains(msg, frag) {
			return true
		}
	}
	return false
}
