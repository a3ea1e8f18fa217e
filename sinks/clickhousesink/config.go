package clickhousesink

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	chgo "github.com/ClickHouse/clickhouse-go/v2"
)

// Defaults of Config; DefaultConfig returns them.
const (
	DefaultDatabase      = "fusebox"
	DefaultUsername      = "default"
	DefaultBatchSize     = 10000
	DefaultFlushInterval = time.Second
	DefaultBufferCap     = 100000
	DefaultDialTimeout   = 10 * time.Second
	DefaultInsertTimeout = 60 * time.Second
	DefaultRetryMin      = 200 * time.Millisecond
	DefaultRetryMax      = 10 * time.Second
	DefaultMaxOpenConns  = 4
)

// Config configures the ClickHouse connection and the sink's batching. Zero
// fields are not filled in: start from DefaultConfig.
type Config struct {
	// Addrs are native-protocol addresses, "host:9000" (9440 with TLS);
	// clickhouse-go tries them in order. Required.
	Addrs []string
	// Database holds the fusebox tables (default "fusebox"); it must be a
	// plain identifier: letters, digits, underscore.
	Database string
	// Username and Password authenticate (default user "default", no
	// password).
	Username string
	Password string

	// TLS, when set, is used as is. Otherwise TLSCAFile, TLSCertFile and
	// TLSKeyFile (PEM) build one when any of them or TLSEnable is set;
	// TLSServerName overrides the name checked in the server certificate.
	TLS           *tls.Config
	TLSEnable     bool
	TLSCAFile     string
	TLSCertFile   string
	TLSKeyFile    string
	TLSServerName string

	// BatchSize is the most rows of one table sent in one INSERT (default
	// 10000). A flush starts early when this many rows are pending.
	BatchSize int
	// FlushInterval is the longest a written row waits before the sink
	// tries to insert it (default 1s).
	FlushInterval time.Duration
	// BufferCap bounds the rows (verdicts, commands and rollups together)
	// held and not yet inserted. Write blocks while it is reached, so a
	// ClickHouse outage stops the pipeline instead of growing memory
	// (default 100000). It must be at least BatchSize.
	BufferCap int

	// DialTimeout bounds connecting (default 10s); InsertTimeout bounds one
	// INSERT of a batch (default 60s).
	DialTimeout   time.Duration
	InsertTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between failed inserts
	// (defaults 200ms and 10s).
	RetryMin time.Duration
	RetryMax time.Duration
	// MaxOpenConns caps the connection pool (default 4).
	MaxOpenConns int
	// Compress sends blocks LZ4-compressed (default true).
	Compress bool
}

// DefaultConfig returns the defaults documented on Config, with no address.
func DefaultConfig() Config {
	return Config{
		Database:      DefaultDatabase,
		Username:      DefaultUsername,
		BatchSize:     DefaultBatchSize,
		FlushInterval: DefaultFlushInterval,
		BufferCap:     DefaultBufferCap,
		DialTimeout:   DefaultDialTimeout,
		InsertTimeout: DefaultInsertTimeout,
		RetryMin:      DefaultRetryMin,
		RetryMax:      DefaultRetryMax,
		MaxOpenConns:  DefaultMaxOpenConns,
		Compress:      true,
	}
}

// ConfigError names the Config field that is wrong.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "clickhousesink: config " + e.Field + ": " + e.Reason }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidIdentifier reports whether name can be used as a database name
// without quoting on every ClickHouse version.
func ValidIdentifier(name string) bool { return identRE.MatchString(name) }

// Validate reports every invalid field (errors.Join of *ConfigError).
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, reason string) { errs = append(errs, &ConfigError{Field: field, Reason: reason}) }
	if len(c.Addrs) == 0 {
		bad("addrs", "at least one host:port is required")
	}
	for i, a := range c.Addrs {
		if a == "" {
			bad(fmt.Sprintf("addrs[%d]", i), "empty address")
		}
	}
	if !ValidIdentifier(c.Database) {
		bad("database", fmt.Sprintf("%q: want letters, digits and underscores, not starting with a digit", c.Database))
	}
	if c.Username == "" {
		bad("username", "empty (the server's default user is \"default\")")
	}
	if c.TLS != nil && (c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "") {
		bad("tls", "set either tls or the tls_*_file fields, not both")
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		bad("tls_cert_file", "tls_cert_file and tls_key_file go together")
	}
	if c.BatchSize < 1 {
		bad("batch_size", fmt.Sprintf("%d: must be at least 1", c.BatchSize))
	}
	if c.FlushInterval <= 0 {
		bad("flush_interval", "must be positive")
	}
	if c.BufferCap < c.BatchSize {
		bad("buffer_cap", fmt.Sprintf("%d: must be at least batch_size %d", c.BufferCap, c.BatchSize))
	}
	if c.DialTimeout <= 0 {
		bad("dial_timeout", "must be positive")
	}
	if c.InsertTimeout <= 0 {
		bad("insert_timeout", "must be positive")
	}
	if c.RetryMin <= 0 {
		bad("retry_min", "must be positive")
	}
	if c.RetryMax < c.RetryMin {
		bad("retry_max", fmt.Sprintf("%v: must be at least retry_min %v", c.RetryMax, c.RetryMin))
	}
	if c.MaxOpenConns < 1 {
		bad("max_open_conns", fmt.Sprintf("%d: must be at least 1", c.MaxOpenConns))
	}
	return errors.Join(errs...)
}

// tlsConfig returns the TLS configuration Config asks for, nil for none.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.TLS != nil {
		return c.TLS, nil
	}
	if !c.TLSEnable && c.TLSCAFile == "" && c.TLSCertFile == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TLSServerName}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, &ConfigError{Field: "tls_ca_file", Reason: err.Error()}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &ConfigError{Field: "tls_ca_file", Reason: c.TLSCAFile + ": no PEM certificate found"}
		}
		t.RootCAs = pool
	}
	if c.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, &ConfigError{Field: "tls_cert_file", Reason: err.Error()}
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// Options returns the clickhouse-go options for Config, connecting to
// database (the Config's own when empty).
func (c *Config) Options(database string) (*chgo.Options, error) {
	if database == "" {
		database = c.Database
	}
	t, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	o := &chgo.Options{
		Protocol:     chgo.Native,
		Addr:         append([]string(nil), c.Addrs...),
		Auth:         chgo.Auth{Database: database, Username: c.Username, Password: c.Password},
		TLS:          t,
		DialTimeout:  c.DialTimeout,
		ReadTimeout:  c.InsertTimeout,
		MaxOpenConns: c.MaxOpenConns,
		MaxIdleConns: c.MaxOpenConns,
	}
	if c.Compress {
		o.Compression = &chgo.Compression{Method: chgo.CompressionLZ4}
	}
	return o, nil
}

// Open opens a connection pool for Config to database (the Config's own
// when empty). It validates the Config and does not dial: the first query
// does.
func Open(cfg Config, database string) (chgo.Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o, err := cfg.Options(database)
	if err != nil {
		return nil, err
	}
	return chgo.Open(o)
}
