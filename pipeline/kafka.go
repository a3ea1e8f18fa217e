package pipeline

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
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

// ensureTopics creates missing topics and checks the partition count of the
// ones fusebox partitions by hand (keyed and state must agree).
func ensureTopics(ctx context.Context, adm *kadm.Client, sasl bool, specs []topicSpec) (map[string]int32, error) {
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
		resp, err := adm.CreateTopic(ctx, s.partitions, -1, s.configs, s.name)
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
