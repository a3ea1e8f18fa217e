package testharness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

func TestClickHouseQueryRoundTrip(t *testing.T) {
	ch := StartClickHouse(t)
	t.Logf("ClickHouse %s at %s (%s)", ch.ServerVersion, ch.Addr, ch.Source)
	db := ch.NewDatabase(t)
	conn := ch.ConnDatabase(t, db)
	ctx := context.Background()

	// DDL that is valid on 18.16 and on current servers (docs/testing.md,
	// "ClickHouse 18.16 and current servers").
	if err := conn.Exec(ctx, `CREATE TABLE spans (
		ts DateTime, tenant String, latency_ms Float64, tokens UInt32
	) ENGINE = MergeTree PARTITION BY toYYYYMM(ts) ORDER BY (tenant, ts)`); err != nil {
		t.Fatalf("create table: %v", err)
	}
	// Named columns: 18.16 rejects a column-less PrepareBatch.
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO spans (ts, tenant, latency_ms, tokens)")
	if err != nil {
		t.Fatalf("prepare batch: %v", err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	for i := 0; i < 100; i++ {
		if err := batch.Append(base.Add(time.Duration(i)*time.Second), fmt.Sprintf("t%d", i%3), float64(i)+0.5, uint32(i)); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatalf("send: %v", err)
	}
	var (
		n      uint64
		sum    float64
		tokens uint64
		first  time.Time
	)
	row := conn.QueryRow(ctx, "SELECT count(), sum(latency_ms), sum(tokens), min(ts) FROM spans WHERE tenant = ?", "t1")
	if err := row.Scan(&n, &sum, &tokens, &first); err != nil {
		t.Fatalf("select: %v", err)
	}
	// tenant t1 holds i = 1, 4, ..., 97: 33 rows.
	var wantSum float64
	var wantTokens uint64
	for i := 1; i < 100; i += 3 {
		wantSum += float64(i) + 0.5
		wantTokens += uint64(i)
	}
	if n != 33 || sum != wantSum || tokens != wantTokens || !first.Equal(base.Add(time.Second)) {
		t.Errorf("got count=%d sum=%v tokens=%d min(ts)=%v; want 33, %v, %d, %v", n, sum, tokens, first, wantSum, wantTokens, base.Add(time.Second))
	}
}

func TestClickHouseDatabaseIsolation(t *testing.T) {
	ch := StartClickHouse(t)
	admin := ch.Conn(t)
	ctx := context.Background()
	var dbA, dbB string
	t.Run("a", func(t *testing.T) {
		dbA = ch.NewDatabase(t)
		conn := ch.ConnDatabase(t, dbA)
		if err := conn.Exec(ctx, "CREATE TABLE t (x UInt64) ENGINE = MergeTree ORDER BY x"); err != nil {
			t.Fatal(err)
		}
		b, err := conn.PrepareBatch(ctx, "INSERT INTO t (x)")
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(0); i < 10; i++ {
			if err := b.Append(i); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Send(); err != nil {
			t.Fatal(err)
		}
		t.Run("b sees its own empty table", func(t *testing.T) {
			dbB = ch.NewDatabase(t)
			if dbB == dbA {
				t.Fatalf("NewDatabase returned %s twice", dbA)
			}
			connB := ch.ConnDatabase(t, dbB)
			if err := connB.Exec(ctx, "CREATE TABLE t (x UInt64) ENGINE = MergeTree ORDER BY x"); err != nil {
				t.Fatal(err)
			}
			var n uint64
			if err := connB.QueryRow(ctx, "SELECT count() FROM t").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("table t in %s has %d rows written to %s", dbB, n, dbA)
			}
		})
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 10 {
			t.Errorf("%s.t has %d rows, want 10", dbA, n)
		}
		if !databaseExists(t, admin, dbA) || databaseExists(t, admin, dbB) {
			t.Errorf("after subtest b: %s exists=%v (want true), %s exists=%v (want false: dropped at cleanup)",
				dbA, databaseExists(t, admin, dbA), dbB, databaseExists(t, admin, dbB))
		}
	})
	if databaseExists(t, admin, dbA) {
		t.Errorf("database %s still exists after its test ended", dbA)
	}
	if !regexp.MustCompile(`^fbt_[a-z0-9_]+_\d+_\d+$`).MatchString(dbA) {
		t.Errorf("database name %q is not of the form fbt_<test>_<pid>_<n>", dbA)
	}
}

func databaseExists(t *testing.T, conn driver.Conn, db string) bool {
	t.Helper()
	var n uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM system.databases WHERE name = ?", db).Scan(&n); err != nil {
		t.Fatalf("system.databases: %v", err)
	}
	return n == 1
}

// requireLocalBinary returns the clickhouse-server the harness would start,
// skipping (or failing under FUSEBOX_REQUIRE_CLICKHOUSE) when there is none.
func requireLocalBinary(t *testing.T) string {
	t.Helper()
	bin := findClickHouseServer(systemLookup())
	if bin != "" {
		return bin
	}
	msg := "clickhouse-server is not installed (apt-get install -y clickhouse-server): the local server's start and stop cannot be tested"
	if requireClickHouse() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// processGone reports whether pid no longer exists.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// portClosed reports whether nothing accepts connections on addr.
func portClosed(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func TestLocalServerStartStop(t *testing.T) {
	bin := requireLocalBinary(t)
	s, err := startLocalServer(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	ch := &ClickHouse{Addr: s.Addr(), Database: "default", Username: "default"}
	conn := ch.Conn(t)
	var one uint8
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Errorf("addr %s is not loopback", s.Addr())
	}
	pid, addr, dir := s.Pid(), s.Addr(), s.Dir
	if processGone(pid) {
		t.Fatalf("pid %d not running while the server answers", pid)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !processGone(pid) {
		t.Errorf("pid %d still exists after Stop", pid)
	}
	if !portClosed(addr) {
		t.Errorf("%s still accepts connections after Stop", addr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s not removed: %v", dir, err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestLocalServerStartFailureShowsLogTail(t *testing.T) {
	// A stand-in binary that fails the way a broken install does: it
	// writes to its console and exits. What is under test is the harness's
	// failure report, not ClickHouse.
	bin := filepath.Join(t.TempDir(), "clickhouse-server")
	script := "#!/bin/sh\necho \"Code: 76. DB::Exception: Cannot open file config.xml: fake failure\" >&2\nexit 70\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := startLocalServer(context.Background(), bin)
	if err == nil {
		t.Fatal("start of a failing binary returned no error")
	}
	for _, want := range []string{"exited before it was ready", "exit status 70", "server log tail", "fake failure", bin} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// Subprocess helpers: the parent test runs this test binary again with
// envHelper set to one of these modes.
const envHelper = "FUSEBOX_TESTHARNESS_HELPER"

// TestHelperProcess is not a test of its own: it runs only as a subprocess of
// the tests below.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		t.Skip("helper for subprocess tests")
	}
	ch := StartClickHouse(t)
	var one uint8
	if err := ch.Conn(t).QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	s := sharedLocal()
	if s == nil {
		t.Fatalf("shared server is not a local one (source %s)", ch.Source)
	}
	fmt.Printf("HELPER pid=%d addr=%s dir=%s\n", s.Pid(), s.Addr(), s.Dir)
	if mode == "crash" {
		os.Exit(3) // no Main cleanup: the kernel's parent-death signal must end the server
	}
}

type helperOut struct {
	pid       int
	addr, dir string
	output    string
	err       error
}

func runHelper(t *testing.T, mode string, extraEnv ...string) helperOut {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, EnvClickHouseAddr+"=")
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.CombinedOutput()
	h := helperOut{output: string(out), err: err}
	if m := regexp.MustCompile(`HELPER pid=(\d+) addr=(\S+) dir=(\S+)`).FindStringSubmatch(h.output); m != nil {
		h.pid, _ = strconv.Atoi(m[1])
		h.addr, h.dir = m[2], m[3]
	}
	return h
}

// TestMainStopsSharedServer runs a test binary that starts the shared server
// through StartClickHouse and ends through Main: afterwards the server's
// process is gone, its port closed and its directory removed.
func TestMainStopsSharedServer(t *testing.T) {
	requireLocalBinary(t)
	h := runHelper(t, "main")
	if h.err != nil || h.pid == 0 {
		t.Fatalf("helper: %v\n%s", h.err, h.output)
	}
	if !processGone(h.pid) {
		t.Errorf("server pid %d still exists after the test binary ended", h.pid)
	}
	if !portClosed(h.addr) {
		t.Errorf("%s still accepts connections after the test binary ended", h.addr)
	}
	if _, err := os.Stat(h.dir); !os.IsNotExist(err) {
		t.Errorf("server dir %s not removed: %v", h.dir, err)
	}
}

// TestCrashedBinaryTakesServerDown: a test binary that dies without running
// Main's cleanup must not leave a server behind.
func TestCrashedBinaryTakesServerDown(t *testing.T) {
	requireLocalBinary(t)
	h := runHelper(t, "crash")
	var ee *exec.ExitError
	if !errors.As(h.err, &ee) || ee.ExitCode() != 3 || h.pid == 0 {
		t.Fatalf("helper should exit 3 after printing its server: %v\n%s", h.err, h.output)
	}
	t.Cleanup(func() { os.RemoveAll(h.dir) }) // Main did not run to remove it
	// The kernel delivers SIGKILL on the parent's death; give it a moment.
	if !Poll(20*time.Second, func() bool { return processGone(h.pid) }) {
		_ = syscall.Kill(h.pid, syscall.SIGKILL)
		t.Fatalf("server pid %d outlived its crashed test binary", h.pid)
	}
	if !portClosed(h.addr) {
		t.Errorf("%s still accepts connections", h.addr)
	}
}

// TestStartClickHouseWithoutMain: a package that forgot TestMain gets a
// failure that says what to add, not a leaked server.
func TestStartClickHouseWithoutMain(t *testing.T) {
	h := runHelper(t, "main", envNoMain+"=1")
	if h.err == nil {
		t.Fatalf("helper without Main passed:\n%s", h.output)
	}
	if !strings.Contains(h.output, "func TestMain(m *testing.M) { testharness.Main(m) }") {
		t.Errorf("failure does not say how to fix it:\n%s", h.output)
	}
	if h.pid != 0 {
		t.Errorf("a server (pid %d) was started without Main", h.pid)
	}
}
