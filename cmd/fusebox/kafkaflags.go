package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/broker"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// envKafkaPassword is read when --sasl-password is not given, which keeps
// the password out of the process list.
const envKafkaPassword = "FUSEBOX_KAFKA_PASSWORD"

// kafkaFlags are the Kafka client flags shared by the commands that talk to
// a broker: seeds, client id, SASL (the mechanisms `fusebox broker
// --sasl-user` accepts) and TLS. They fill a config.Kafka, the same
// section `fusebox run` reads from its file, so both build their clients
// with pipeline.KafkaOpts.
type kafkaFlags struct {
	brokers       string
	clientID      string
	saslMechanism string
	saslUser      string
	saslPassword  string
	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
	tlsInsecure   bool
}

// register adds the flags; clientID is the default client id.
func (k *kafkaFlags) register(fs *flag.FlagSet, clientID string) {
	fs.StringVar(&k.brokers, "brokers", broker.DefaultListen, "Kafka seed `host:port` list, comma-separated")
	fs.StringVar(&k.clientID, "client-id", clientID, "Kafka client `id`")
	fs.StringVar(&k.saslMechanism, "sasl-mechanism", "", "SASL `mechanism`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default: no SASL)")
	fs.StringVar(&k.saslUser, "sasl-user", "", "SASL `user`")
	fs.StringVar(&k.saslPassword, "sasl-password", "", "SASL `password` (default: $"+envKafkaPassword+", which keeps it out of the process list)")
	fs.BoolVar(&k.tls, "tls", false, "connect with TLS (implied by the --tls-* files)")
	fs.StringVar(&k.tlsCA, "tls-ca", "", "PEM `file` of the CA that signed the broker certificates (default: the system roots)")
	fs.StringVar(&k.tlsCert, "tls-cert", "", "PEM `file` of a client certificate (with --tls-key)")
	fs.StringVar(&k.tlsKey, "tls-key", "", "PEM `file` of the client certificate's key")
	fs.StringVar(&k.tlsServerName, "tls-server-name", "", "`name` to verify in the broker certificate (default: the host)")
	fs.BoolVar(&k.tlsInsecure, "tls-insecure-skip-verify", false, "do not verify the broker certificate (testing only)")
}

// config checks the flags and returns them as a config.Kafka. Errors name
// the flag.
func (k *kafkaFlags) config() (config.Kafka, error) {
	c := config.Kafka{ClientID: k.clientID}
	for _, b := range strings.Split(k.brokers, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(b); err != nil {
			return c, fmt.Errorf("--brokers %q: want host:port: %v", b, err)
		}
		c.Brokers = append(c.Brokers, b)
	}
	if len(c.Brokers) == 0 {
		return c, fmt.Errorf("--brokers: give at least one host:port")
	}
	if c.ClientID == "" {
		return c, fmt.Errorf("--client-id: must not be empty")
	}
	switch m := strings.ToUpper(k.saslMechanism); m {
	case "":
		if k.saslUser != "" || k.saslPassword != "" {
			return c, fmt.Errorf("--sasl-user and --sasl-password need --sasl-mechanism")
		}
	case broker.MechPlain, broker.MechScramSHA256, broker.MechScramSHA512:
		c.SASL = config.SASL{Mechanism: m, Username: k.saslUser, Password: k.saslPassword}
		if c.SASL.Password == "" {
			c.SASL.Password = os.Getenv(envKafkaPassword)
		}
		if c.SASL.Username == "" {
			return c, fmt.Errorf("--sasl-mechanism %s needs --sasl-user", m)
		}
		if c.SASL.Password == "" {
			return c, fmt.Errorf("--sasl-mechanism %s needs --sasl-password or $%s", m, envKafkaPassword)
		}
	default:
		return c, fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", k.saslMechanism)
	}
	c.TLS = config.TLS{
		Enabled: k.tls || k.tlsCA != "" || k.tlsCert != "" || k.tlsInsecure || k.tlsServerName != "",
		CAFile:  k.tlsCA, CertFile: k.tlsCert, KeyFile: k.tlsKey, ServerName: k.tlsServerName,
		InsecureSkipVerify: k.tlsInsecure,
	}
	if (k.tlsCert == "") != (k.tlsKey == "") {
		return c, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	return c, nil
}

// opts returns the franz-go options of the flags: seeds, client id, TLS,
// SASL.
func (k *kafkaFlags) opts() ([]kgo.Opt, error) {
	c, err := k.config()
	if err != nil {
		return nil, err
	}
	return pipeline.KafkaOpts(c)
}
