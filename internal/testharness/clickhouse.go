package testharness

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// ClickHouse is a ClickHouse server reachable over the native protocol. All
// tests of one test binary share one server; each test that writes should
// take its own database with NewDatabase.
type ClickHouse struct {
	// Addr is the native-protocol address, "host:port" (for the harness's
	// own server "127.0.0.1:PORT").
	Addr string
	// Database is the database Conn connects to: "default" unless the
	// address came with another one.
	Database string
	// Username and Password authenticate the connection ("default" and ""
	// for the harness's own server).
	Username string
	Password string
	// Source says where the server came from: FUSEBOX_CLICKHOUSE_ADDR,
	// "local clickhouse-server" or "testcontainers".
	Source string
	// ServerVersion is what the server reported, e.g. "18.16.1".
	ServerVersion string
}

// connTimeout bounds dialing and each read of the harness's connections.
const connTimeout = 30 * time.Second

// mainActive is set by Main: the shared server is stopped only there, so
// StartClickHouse refuses to start one without it.
var mainActive atomic.Bool

// shared is the one server per test binary.
var shared struct {
	once sync.Once
	plan clickHousePlan
	ch   *ClickHouse
	err  error
	stop func() error
	// local is set when the harness started clickhouse-server itself.
	local *localServer
}

// Main runs the tests of a package and then stops the ClickHouse server the
// harness may have started. Every package whose tests call StartClickHouse
// needs it:
//
//	func TestMain(m *testing.M) { testharness.Main(m) }
//
// It exits the process with m.Run's code (1 if stopping the server failed).
func Main(m *testing.M) {
	mainActive.Store(true)
	code := m.Run()
	if err := stopSharedClickHouse(); err != nil {
		fmt.Fprintf(os.Stderr, "testharness: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// StartClickHouse returns the test binary's ClickHouse server, starting it on
// first use. Where it comes from, in order:
//
//  1. FUSEBOX_CLICKHOUSE_ADDR: "host:port" of a running server (user
//     "default", no password) or a DSN "clickhouse://user:pass@host:port/db";
//  2. clickhouse-server on PATH or in /usr/sbin, /usr/bin, /usr/local/bin,
//     started by the harness on a free loopback port with its config, data
//     and logs in a temporary directory, stopped (SIGTERM, then SIGKILL
//     after 15 s) and removed by Main after the tests;
//  3. testcontainers-go with clickhouse/clickhouse-server where a Docker
//     engine answers;
//  4. else the test is skipped with a message saying how to enable
//     ClickHouse, or fails if FUSEBOX_REQUIRE_CLICKHOUSE is true.
//
// A server that is found but does not answer fails the test, with the tail of
// its log when the harness started it. The package must run its tests through
// Main (see there), else StartClickHouse fails the test.
func StartClickHouse(t testing.TB) *ClickHouse {
	t.Helper()
	if !mainActive.Load() {
		t.Fatalf("testharness: StartClickHouse needs the package's tests to run through testharness.Main, " +
			"which stops the shared server: add\n\tfunc TestMain(m *testing.M) { testharness.Main(m) }")
	}
	shared.once.Do(startSharedClickHouse)
	if shared.plan.Source == sourceNone {
		if shared.plan.Fatal {
			t.Fatalf("testharness: %s", shared.plan.Reason)
		}
		t.Skipf("testharness: %s", shared.plan.Reason)
	}
	if shared.err != nil {
		t.Fatalf("testharness: ClickHouse (%s): %v", shared.plan.Source, shared.err)
	}
	c := *shared.ch
	return &c
}

func startSharedClickHouse() {
	shared.plan = planClickHouse(systemLookup())
	ctx := context.Background()
	switch shared.plan.Source {
	case sourceNone:
		return
	case sourceAddr:
		shared.ch, shared.err = parseClickHouseAddr(shared.plan.Addr)
	case sourceLocal:
		var s *localServer
		s, shared.err = startLocalServer(ctx, shared.plan.Binary)
		if shared.err == nil {
			shared.stop = s.Stop
			shared.local = s
			shared.ch = &ClickHouse{Addr: s.Addr(), Database: "default", Username: "default"}
		}
	case sourceContainer:
		var addr string
		addr, shared.stop, shared.err = startContainer(ctx)
		if shared.err == nil {
			shared.ch = &ClickHouse{Addr: addr, Database: "default", Username: containerUser, Password: containerPassword}
		}
	}
	if shared.err != nil {
		return
	}
	shared.ch.Source = shared.plan.Source.String()
	shared.ch.ServerVersion, shared.err = pingVersion(ctx, shared.ch)
}

// stopSharedClickHouse stops the server StartClickHouse started, if any.
func stopSharedClickHouse() error {
	if shared.stop == nil {
		return nil
	}
	stop := shared.stop
	shared.stop = nil
	return stop()
}

// parseClickHouseAddr reads FUSEBOX_CLICKHOUSE_ADDR: "host:port" or a
// clickhouse-go DSN.
func parseClickHouseAddr(v string) (*ClickHouse, error) {
	if strings.Contains(v, "://") {
		opt, err := clickhouse.ParseDSN(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", EnvClickHouseAddr, v, err)
		}
		if len(opt.Addr) != 1 {
			return nil, fmt.Errorf("%s=%q: want exactly one host, got %d", EnvClickHouseAddr, v, len(opt.Addr))
		}
		c := &ClickHouse{Addr: opt.Addr[0], Database: opt.Auth.Database, Username: opt.Auth.Username, Password: opt.Auth.Password}
		if c.Database == "" {
			c.Database = "default"
		}
		if c.Username == "" {
			c.Username = "default"
		}
		return c, nil
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return nil, fmt.Errorf("%s=%q: want host:port of the native protocol (e.g. 127.0.0.1:9000) or clickhouse://user:pass@host:port: %w",
			EnvClickHouseAddr, v, err)
	}
	return &ClickHouse{Addr: v, Database: "default", Username: "default"}, nil
}

// pingVersion checks that the server answers and returns its version.
func pingVersion(ctx context.Context, c *ClickHouse) (string, error) {
	conn, err := clickhouse.Open(c.Options(c.Database))
	if err != nil {
		return "", fmt.Errorf("open %s: %w", c.Addr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, connTimeout)
	defer cancel()
	if err := conn.Ping(ctx); err != nil {
		return "", fmt.Errorf("ping %s: %w", c.Addr, err)
	}
	v, err := conn.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("server version %s: %w", c.Addr, err)
	}
	return fmt.Sprintf("%d.%d.%d", v.Version.Major, v.Version.Minor, v.Version.Patch), nil
}

// Options returns clickhouse-go options for the native protocol to the given
// database ("" for c.Database), for code under test that opens its own
// connections.
func (c *ClickHouse) Options(database string) *clickhouse.Options {
	if database == "" {
		database = c.Database
	}
	return &clickhouse.Options{
		Protocol:    clickhouse.Native,
		Addr:        []string{c.Addr},
		Auth:        clickhouse.Auth{Database: database, Username: c.Username, Password: c.Password},
		DialTimeout: connTimeout,
		ReadTimeout: connTimeout,
	}
}

// Conn opens a native-protocol connection to c.Database, closed when the test
// ends, and fails the test if the server does not answer a Ping.
func (c *ClickHouse) Conn(t testing.TB) driver.Conn {
	t.Helper()
	return c.ConnDatabase(t, c.Database)
}

// ConnDatabase is Conn to another database, such as one from NewDatabase.
func (c *ClickHouse) ConnDatabase(t testing.TB, database string) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(c.Options(database))
	if err != nil {
		t.Fatalf("testharness: clickhouse open %s/%s: %v", c.Addr, database, err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), connTimeout)
	defer cancel()
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("testharness: clickhouse ping %s/%s: %v", c.Addr, database, err)
	}
	return conn
}

// dbSeq numbers the databases of one test binary.
var dbSeq atomic.Int64

// unsafeIdent matches what may not appear in an unquoted ClickHouse
// identifier.
var unsafeIdent = regexp.MustCompile(`[^a-zA-Z0-9_]+`)

// NewDatabase creates an empty database for this test and drops it when the
// test ends. The name, "fbt_<test>_<pid>_<n>", is unique across test binaries
// sharing one server (FUSEBOX_CLICKHOUSE_ADDR) and safe to use unquoted.
func (c *ClickHouse) NewDatabase(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(unsafeIdent.ReplaceAllString(t.Name(), "_"))
	if len(name) > 40 {
		name = name[:40]
	}
	db := fmt.Sprintf("fbt_%s_%d_%d", strings.Trim(name, "_"), os.Getpid(), dbSeq.Add(1))
	conn := c.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), connTimeout)
	defer cancel()
	if err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("testharness: create database %s: %v", db, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), connTimeout)
		defer cancel()
		if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Errorf("testharness: drop database %s: %v", db, err)
		}
	})
	return db
}

// sharedLocal returns the harness's own server, or nil when the shared
// server came from elsewhere (for tests of its lifecycle).
func sharedLocal() *localServer { return shared.local }
