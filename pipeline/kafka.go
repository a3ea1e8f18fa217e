package pipeline

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// KafkaOpts turns the kafka section into franz-go client options: seeds,
// client id, TLS and SASL. Errors name the config field.
func KafkaOpts(k config.Kafka) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.ClientID(k.ClientID)}
	if k.TLS.Enabled {
		tc, err := TLSConfig(k.TLS, "kafka.tls")
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if k.SASL.Mechanism != "" {
		pass := k.SASL.Password
		if k.SASL.PasswordEnv != "" {
			v, ok := os.LookupEnv(k.SASL.PasswordEnv)
			if !ok {
				return nil, fmt.Errorf("kafka.sasl.password_env: environment variable %s is not set", k.SASL.PasswordEnv)
			}
			pass = v
		}
		switch k.SASL.Mechanism {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: k.SASL.Username, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: k.SASL.Username, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: k.SASL.Username, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("kafka.sasl.mechanism: unknown mechanism %q", k.SASL.Mechanism)
		}
	}
	return opts, nil
}

// TLSConfig builds a client TLS configuration from files; field prefixes
// the errors.
func TLSConfig(t config.TLS, field string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.ca_file: %w", field, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.ca_file: no PEM certificate in %s", field, t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s.cert_file: %w", field, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// ErrKafkaAuth is returned when the broker closed the connection during
// SASL authentication, which is how some brokers (kfake among them) answer a
// wrong password.
var ErrKafkaAuth = errors.New("kafka SASL authentication failed: check kafka.sasl.username, password and mechanism")

// topicSpec is a topic fusebox needs.
type topicSpec struct {
	name       string
	partitions int32
	configs    map[string]*string
}

// ensureTopics creates missing topics, with replicationFactor replicas
// (-1: the broker's default) and the spec's configs, and returns every
// topic's partition count (keyed and state must agree).
func ensureTopics(ctx context.Context, adm *kadm.Client, sasl bool, replicationFactor int16, specs []topicSpec) (map[string]int32, error) {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, WrapKafkaAuth(fmt.Errorf("list topics: %w", err), sasl)
	}
	counts := map[string]int32{}
	for _, s := range specs {
		if d, ok := td[s.name]; ok && d.Err == nil {
			counts[s.name] = int32(len(d.Partitions))
			continue
		}
		resp, err := adm.CreateTopic(ctx, s.partitions, replicationFactor, s.configs, s.name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && resp.ErrMessage != "" && !strings.Contains(err.Error(), resp.ErrMessage) {
			// Apache Kafka says which config it refused only in the message.
			err = fmt.Errorf("%w (%s)", err, resp.ErrMessage)
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return nil, fmt.Errorf("create topic %s: %w", s.name, err)
		}
		counts[s.name] = s.partitions
	}
	return counts, nil
}

// WrapKafkaAuth turns err, from a client that authenticates with SASL
// (sasl true), into one wrapping ErrKafkaAuth when it looks like the broker
// refused the credentials (a closed connection or a SASL error); other
// errors are returned unchanged.
func WrapKafkaAuth(err error, sasl bool) error {
	if err != nil && sasl && (strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "SASL")) {
		return fmt.Errorf("%w (%v)", ErrKafkaAuth, err)
	}
	return err
}

func strp(s string) *string { return &s }

// createdTopicConfigs are the configs of a topic fusebox creates: base
// plus min.insync.replicas when topics.min_insync_replicas is set.
func createdTopicConfigs(t config.Topics, base map[string]*string) map[string]*string {
	out := map[string]*string{}
	for k, v := range base {
		out[k] = v
	}
	if t.MinInsyncReplicas > 0 {
		out["min.insync.replicas"] = strp(strconv.Itoa(t.MinInsyncReplicas))
	}
	return out
}

// checkReplication logs (WARN), for each of topics that exists with fewer
// replicas than topics.replication_factor or a lower min.insync.replicas
// than topics.min_insync_replicas, the topic, the setting, what it has
// and what the SLO file asks for: fusebox does not alter a topic it did
// not create, and it runs on a weaker one, but an operator must hear that
// losing a broker can lose or stop its writes there. It returns the
// warnings (tests). A failed lookup is logged and skipped: this check
// never stops a start.
func checkReplication(ctx context.Context, adm *kadm.Client, t config.Topics, topics []string, log *slog.Logger) []string {
	if t.ReplicationFactor <= 0 && t.MinInsyncReplicas <= 0 {
		return nil
	}
	var warns []string
	warn := func(topic, setting string, have, want int) {
		msg := fmt.Sprintf("topic %s has %s %d, below the %d the SLO file asks for (topics.%s)", topic, setting, have, want,
			map[string]string{"replication factor": "replication_factor", "min.insync.replicas": "min_insync_replicas"}[setting])
		warns = append(warns, msg)
		log.Warn("kafka topic weaker than configured: losing a broker may lose or stop writes to it", "topic", topic, "setting", setting,
			"have", have, "want", want)
	}
	td, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		log.Warn("kafka topics: could not check their replication", "err", err)
		return nil
	}
	if want := int(t.ReplicationFactor); want > 0 {
		for _, topic := range topics {
			d, ok := td[topic]
			if !ok || d.Err != nil || len(d.Partitions) == 0 {
				continue
			}
			have := -1
			for _, p := range d.Partitions {
				if have < 0 || len(p.Replicas) < have {
					have = len(p.Replicas)
				}
			}
			if have < want {
				warn(topic, "replication factor", have, want)
			}
		}
	}
	if want := t.MinInsyncReplicas; want > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
		if err != nil {
			log.Warn("kafka topics: could not check their min.insync.replicas", "err", err)
			return warns
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				continue
			}
			for _, c := range rc.Configs {
				if c.Key != "min.insync.replicas" {
					continue
				}
				if have, err := strconv.Atoi(c.MaybeValue()); err == nil && have < want {
					warn(rc.Name, "min.insync.replicas", have, want)
				}
			}
		}
	}
	return warns
}
