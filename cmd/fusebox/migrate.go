package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
)

const migrateDescription = `Creates the fusebox database in ClickHouse when it is missing and applies
the schema migrations it has not applied yet, in order, recording each in
DB.fusebox_schema_migrations. Running it again is a no-op. Steps the server
is too old for (TTL on ClickHouse 18.16) are skipped and recorded as such;
after a server upgrade the next run applies them. Run one migrate at a time.

Examples:
  fusebox migrate --clickhouse 127.0.0.1:9000 --database fusebox
  FUSEBOX_CLICKHOUSE_PASSWORD=secret fusebox migrate --clickhouse ch1:9440,ch2:9440 \
      --user fusebox --tls --tls-ca ca.pem --database fusebox`

// clickhouseFlags are the connection flags of migrate and report.
type clickhouseFlags struct {
	addrs         string
	database      string
	user          string
	password      string
	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
	timeout       time.Duration
}

func (c *clickhouseFlags) register(fs *flag.FlagSet) {
	def := clickhousesink.DefaultConfig()
	fs.StringVar(&c.addrs, "clickhouse", "127.0.0.1:9000", "native-protocol `host:port` of ClickHouse (comma-separated for several)")
	fs.StringVar(&c.database, "database", def.Database, "fusebox `database`")
	fs.StringVar(&c.user, "user", def.Username, "ClickHouse `user`")
	fs.StringVar(&c.password, "password", "", "ClickHouse `password` (default: $FUSEBOX_CLICKHOUSE_PASSWORD, which keeps it out of the process list)")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS (implied by the --tls-* files)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM `file` of the CA that signed the server certificate (default: the system roots)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM `file` of a client certificate (with --tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM `file` of the client certificate's key")
	fs.StringVar(&c.tlsServerName, "tls-server-name", "", "`name` to verify in the server certificate (default: the host)")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "give up after this `duration`")
}

// config turns the flags into a validated sink Config.
func (c *clickhouseFlags) config() (clickhousesink.Config, error) {
	cfg := clickhousesink.DefaultConfig()
	cfg.Addrs = nil
	for _, a := range strings.Split(c.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Addrs = append(cfg.Addrs, a)
		}
	}
	cfg.Database, cfg.Username, cfg.Password = c.database, c.user, c.password
	if cfg.Password == "" {
		cfg.Password = os.Getenv("FUSEBOX_CLICKHOUSE_PASSWORD")
	}
	cfg.TLSEnable, cfg.TLSCAFile, cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSServerName = c.tls, c.tlsCA, c.tlsCert, c.tlsKey, c.tlsServerName
	if c.timeout <= 0 {
		return cfg, fmt.Errorf("--timeout %v: must be positive", c.timeout)
	}
	return cfg, cfg.Validate()
}

// open connects to database ("" for none: the server's default) and checks
// that the server answers.
func (c *clickhouseFlags) open(ctx context.Context, cfg clickhousesink.Config, database string) (driver.Conn, error) {
	if database == "" {
		database = "default"
	}
	conn, err := clickhousesink.Open(cfg, database)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ClickHouse at %s does not answer: %w", strings.Join(cfg.Addrs, ","), err)
	}
	return conn, nil
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var ch clickhouseFlags
	mcfg := clickhousesink.DefaultMigrateConfig()
	fs := newFlagSet("migrate", "--clickhouse HOST:PORT --database DB [flags]", migrateDescription, stdout)
	ch.register(fs)
	fs.IntVar(&mcfg.RollupRetentionDays, "rollup-retention-days", mcfg.RollupRetentionDays,
		"`days` span_rollups rows are kept, on servers with TTL (19.6+); applied when the TTL step first runs")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	cfg, err := ch.config()
	if err != nil {
		fmt.Fprintf(stderr, "fusebox migrate: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, ch.timeout)
	defer cancel()
	// Connect to the server's default database: the fusebox one may not
	// exist yet.
	conn, err := ch.open(ctx, cfg, "")
	if err != nil {
		fmt.Fprintf(stderr, "fusebox migrate: %v\n", err)
		return exitFailure
	}
	defer conn.Close()
	server, err := clickhousesink.QueryServerVersion(ctx, conn)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox migrate: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "database %s on %s (ClickHouse %s)\n", cfg.Database, strings.Join(cfg.Addrs, ","), server)
	results, err := clickhousesink.MigrateWith(ctx, conn, cfg.Database, mcfg)
	applied := 0
	for _, r := range results {
		line := fmt.Sprintf("  %3d  %-20s %s", r.Version, r.Name, r.Outcome)
		if r.Reason != "" {
			line += ": " + r.Reason
		}
		fmt.Fprintln(stdout, line)
		if r.Outcome == clickhousesink.OutcomeApplied {
			applied++
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fusebox migrate: %v\n", err)
		return exitFailure
	}
	if applied == 0 {
		fmt.Fprintln(stdout, "schema up to date: nothing applied")
	} else {
		fmt.Fprintf(stdout, "applied %d migration(s)\n", applied)
	}
	return exitOK
}
