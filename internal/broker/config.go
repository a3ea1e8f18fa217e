// Package broker runs franz-go's kfake, a Kafka-protocol broker, as the
// embedded broker of `fusebox broker`, `fusebox demo` and the closed loop
// (`fusebox bench loop`): one broker on one listen address, optionally
// persisted to a data directory, with topics created at start and
// optional SASL users, optionally held to ACLs.
//
// kfake is not Apache Kafka: it has no replication, one request thread, and
// it accepts topic configs it does not implement. It is for development,
// demos and tests, not for production traffic.
package broker

import (
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Defaults of Config.
const (
	// DefaultListen is the address `fusebox broker` listens on.
	DefaultListen = "127.0.0.1:9092"
	// DefaultPartitions is the partition count of auto-created topics.
	DefaultPartitions = 6
	// MaxPartitions bounds every partition count: kfake keeps every
	// partition in memory.
	MaxPartitions = 10000
)

// SASL mechanisms kfake supports.
const (
	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"
)

// Config configures a Broker. Start validates it first; each error names the
// `fusebox broker` flag that sets the field.
type Config struct {
	// Listen is host:port to listen on (--listen). Port 0 picks a free
	// port; Broker.Addr says which. The host is also what clients are told
	// to connect to, so listen on an address they can reach (0.0.0.0 is
	// advertised as is). Default DefaultListen.
	Listen string
	// DataDir, if set, persists topics, records, offsets and groups there
	// and reloads them on the next start (--data-dir). Empty keeps
	// everything in memory.
	DataDir string
	// SyncWrites fsyncs every produced batch before acknowledging it
	// (--sync-writes). Needs DataDir. Without it, writes reach disk on
	// segment roll and Close, like Kafka's default flush policy.
	SyncWrites bool
	// Topics are created at start (--topic). Topics that already exist
	// (from DataDir) get their configs set and grow to the partitions
	// asked for; they never shrink.
	Topics []TopicSpec
	// Partitions is the partition count of topics created on first use
	// (--partitions). Default DefaultPartitions.
	Partitions int
	// AutoCreateTopics lets clients create topics by producing to or asking
	// metadata for them. Default true.
	AutoCreateTopics bool
	// Users enables SASL with these users (--sasl-user). With SASL, every
	// client must authenticate; without users, no client may. All users are
	// superusers (no ACLs), unless ACLs names them.
	Users []SASLUser
	// ACLs, when not empty, makes the broker enforce ACLs (no flag; tests
	// of deployments with least-privilege principals): each key is the
	// User of one of Users, which may then do exactly what its ACLs allow
	// (Principal is ignored: it is that user). Users not named here stay
	// superusers. Every key must name a user of Users.
	ACLs map[string][]kfake.ACL
	// LogLevel is kfake's log level (--log-level): none, error, warn, info
	// or debug. Default "warn".
	LogLevel string
	// LogOutput receives kfake's log lines. Default os.Stderr.
	LogOutput io.Writer
}

// TopicSpec is a topic to create: --topic NAME:PARTITIONS[:key=value,...].
type TopicSpec struct {
	Name       string
	Partitions int32
	// Configs are topic configs such as cleanup.policy=compact.
	Configs map[string]string
}

// SASLUser is a SASL user: --sasl-user MECHANISM:USER:PASSWORD.
type SASLUser struct {
	// Mechanism is MechPlain, MechScramSHA256 or MechScramSHA512.
	Mechanism string
	User      string
	Password  string
}

// DefaultConfig is the configuration of `fusebox broker` without flags.
func DefaultConfig() Config {
	return Config{
		Listen:           DefaultListen,
		Partitions:       DefaultPartitions,
		AutoCreateTopics: true,
		LogLevel:         "warn",
		LogOutput:        os.Stderr,
	}
}

// ConfigError is a Config field that is wrong, named by its flag (by the
// field's name for a field without a flag: "ACLs").
type ConfigError struct {
	Flag   string // e.g. "--topic"
	Value  string // the offending value
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("broker: %s %q: %s", e.Flag, e.Value, e.Reason)
}

// Validate reports the first thing wrong with c as a *ConfigError.
func (c Config) Validate() error {
	if err := validateListen(c.Listen); err != nil {
		return err
	}
	if c.SyncWrites && c.DataDir == "" {
		return &ConfigError{Flag: "--sync-writes", Value: "true", Reason: "needs --data-dir (there is nothing to sync in memory)"}
	}
	if c.Partitions < 1 || c.Partitions > MaxPartitions {
		return &ConfigError{Flag: "--partitions", Value: strconv.Itoa(c.Partitions),
			Reason: fmt.Sprintf("must be between 1 and %d", MaxPartitions)}
	}
	seen := make(map[string]bool, len(c.Topics))
	for _, t := range c.Topics {
		if err := t.validate(); err != nil {
			return err
		}
		if seen[t.Name] {
			return &ConfigError{Flag: "--topic", Value: t.Name, Reason: "topic given twice"}
		}
		seen[t.Name] = true
	}
	users := make(map[[2]string]bool, len(c.Users))
	for _, u := range c.Users {
		if err := u.validate(); err != nil {
			return err
		}
		k := [2]string{u.Mechanism, u.User}
		if users[k] {
			return &ConfigError{Flag: "--sasl-user", Value: u.Mechanism + ":" + u.User, Reason: "user given twice for this mechanism"}
		}
		users[k] = true
	}
	for name := range c.ACLs {
		if !slices.ContainsFunc(c.Users, func(u SASLUser) bool { return u.User == name }) {
			return &ConfigError{Flag: "ACLs", Value: name, Reason: "names no --sasl-user user"}
		}
	}
	if _, err := ParseLogLevel(c.LogLevel); err != nil {
		return err
	}
	return nil
}

func validateListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return &ConfigError{Flag: "--listen", Value: addr, Reason: "want host:port, e.g. 127.0.0.1:9092"}
	}
	if host == "" {
		return &ConfigError{Flag: "--listen", Value: addr,
			Reason: "host is empty: name the address clients connect to (e.g. 127.0.0.1, or 0.0.0.0 for all interfaces)"}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return &ConfigError{Flag: "--listen", Value: addr, Reason: "port must be a number from 0 to 65535"}
	}
	return nil
}

// legalTopic is Kafka's rule for topic names.
var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

func (t TopicSpec) validate() error {
	if !legalTopic.MatchString(t.Name) || t.Name == "." || t.Name == ".." {
		return &ConfigError{Flag: "--topic", Value: t.Name,
			Reason: "topic names are 1 to 249 of a-z A-Z 0-9 . _ - and not . or .."}
	}
	if t.Partitions < 1 || t.Partitions > MaxPartitions {
		return &ConfigError{Flag: "--topic", Value: fmt.Sprintf("%s:%d", t.Name, t.Partitions),
			Reason: fmt.Sprintf("partitions must be between 1 and %d", MaxPartitions)}
	}
	for k := range t.Configs {
		if k == "" {
			return &ConfigError{Flag: "--topic", Value: t.Name, Reason: "empty config key"}
		}
	}
	return nil
}

func (u SASLUser) validate() error {
	switch u.Mechanism {
	case MechPlain, MechScramSHA256, MechScramSHA512:
	default:
		return &ConfigError{Flag: "--sasl-user", Value: u.Mechanism,
			Reason: fmt.Sprintf("mechanism must be %s, %s or %s", MechPlain, MechScramSHA256, MechScramSHA512)}
	}
	if u.User == "" {
		return &ConfigError{Flag: "--sasl-user", Value: u.Mechanism + ":", Reason: "user is empty"}
	}
	if u.Password == "" {
		return &ConfigError{Flag: "--sasl-user", Value: u.Mechanism + ":" + u.User, Reason: "password is empty"}
	}
	return nil
}

// ParseTopicSpec parses NAME:PARTITIONS[:key=value,...], e.g.
// "fusebox.fuse:6:cleanup.policy=compact,min.compaction.lag.ms=0".
func ParseTopicSpec(s string) (TopicSpec, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 2 {
		return TopicSpec{}, &ConfigError{Flag: "--topic", Value: s, Reason: "want NAME:PARTITIONS[:key=value,...]"}
	}
	n, err := strconv.ParseInt(parts[1], 10, 32)
	if err != nil {
		return TopicSpec{}, &ConfigError{Flag: "--topic", Value: s, Reason: "partitions is not a number"}
	}
	t := TopicSpec{Name: parts[0], Partitions: int32(n)}
	if len(parts) == 3 && parts[2] != "" {
		t.Configs = make(map[string]string)
		for _, kv := range strings.Split(parts[2], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return TopicSpec{}, &ConfigError{Flag: "--topic", Value: s, Reason: fmt.Sprintf("config %q is not key=value", kv)}
			}
			t.Configs[k] = v
		}
	}
	return t, t.validate()
}

// ParseSASLUser parses MECHANISM:USER:PASSWORD; the password may contain
// colons. The mechanism is case-insensitive.
func ParseSASLUser(s string) (SASLUser, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		// Do not echo the value: it may hold a password.
		return SASLUser{}, &ConfigError{Flag: "--sasl-user", Value: parts[0], Reason: "want MECHANISM:USER:PASSWORD"}
	}
	u := SASLUser{Mechanism: strings.ToUpper(parts[0]), User: parts[1], Password: parts[2]}
	return u, u.validate()
}

// ParseLogLevel maps none, error, warn, info, debug to kfake's levels.
func ParseLogLevel(s string) (kfake.LogLevel, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return kfake.LogLevelNone, nil
	case "error":
		return kfake.LogLevelError, nil
	case "warn", "warning":
		return kfake.LogLevelWarn, nil
	case "info":
		return kfake.LogLevelInfo, nil
	case "debug":
		return kfake.LogLevelDebug, nil
	}
	return 0, &ConfigError{Flag: "--log-level", Value: s, Reason: "want none, error, warn, info or debug"}
}
