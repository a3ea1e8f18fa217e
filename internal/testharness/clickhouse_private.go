package testharness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// PrivateClickHouse is a clickhouse-server of one test alone, which the test
// may kill and start again — same port, same data directory — to simulate an
// outage or a crash. The shared server of StartClickHouse cannot be stopped:
// other tests use it.
//
// The embedded ClickHouse gives Addr, Options, Conn, ConnDatabase and
// NewDatabase, as for the shared server (user "default", no password,
// database "default").
type PrivateClickHouse struct {
	ClickHouse

	t      testing.TB
	binary string
	dir    string
	port   int

	mu  sync.Mutex
	srv *localServer // the current process; its exited channel tells if it runs
}

// privateRestartAttempts bounds the retries of a restart whose port is still
// held by the killed process's sockets; privateRestartWait is the pause
// between them.
const (
	privateRestartAttempts = 20
	privateRestartWait     = 250 * time.Millisecond
)

// StartPrivateClickHouse starts a clickhouse-server of this test on a free
// loopback port, with its config, data and logs in a temporary directory
// (the same config as the shared server), and returns once it answers a
// native Ping. It is killed when the test ends. It needs the
// clickhouse-server binary (PATH, /usr/sbin, /usr/bin, /usr/local/bin):
// without it the test is skipped, or fails when FUSEBOX_REQUIRE_CLICKHOUSE is
// true. FUSEBOX_CLICKHOUSE_ADDR does not stand in for it: a server elsewhere
// cannot be killed by the test. It does not need testharness.Main.
func StartPrivateClickHouse(t testing.TB) *PrivateClickHouse {
	t.Helper()
	bin := findClickHouseServer(systemLookup())
	if bin == "" {
		reason := fmt.Sprintf("no %s binary (PATH, %s) for a server this test can kill and restart; "+
			"install it (Debian/Ubuntu: apt-get install -y clickhouse-server)",
			clickHouseServerBinary, strings.Join(clickHouseExtraDirs, ", "))
		if requireClickHouse() {
			t.Fatalf("testharness: %s; failing instead of skipping because %s is set", reason, EnvRequireClickHouse)
		}
		t.Skipf("testharness: %s", reason)
	}
	p := &PrivateClickHouse{t: t, binary: bin, dir: t.TempDir()}
	var err error
	for attempt := 1; attempt <= localStartAttempts; attempt++ {
		if p.port, err = freeLoopbackPort(); err != nil {
			t.Fatalf("testharness: %v", err)
		}
		s := p.server()
		if err = s.writeConfig(); err != nil {
			t.Fatalf("testharness: %v", err)
		}
		if err = p.launch(s); err == nil || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	if err != nil {
		t.Fatalf("testharness: private %v", err)
	}
	p.ClickHouse = ClickHouse{Addr: p.server().Addr(), Database: "default", Username: "default",
		Source: "private clickhouse-server"}
	t.Cleanup(func() {
		if err := p.KillErr(); err != nil {
			t.Errorf("testharness: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), connTimeout)
	defer cancel()
	if p.ServerVersion, err = pingVersion(ctx, &p.ClickHouse); err != nil {
		t.Fatalf("testharness: private clickhouse-server: %v", err)
	}
	return p
}

// requireClickHouse reads FUSEBOX_REQUIRE_CLICKHOUSE; a value that is not a
// boolean counts as true, so a typo cannot turn a failure into a skip.
func requireClickHouse() bool {
	v := strings.TrimSpace(os.Getenv(EnvRequireClickHouse))
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// server returns a localServer describing this server's directory and port
// (without a process).
func (p *PrivateClickHouse) server() *localServer {
	return &localServer{Binary: p.binary, Dir: p.dir, Port: p.port}
}

// Dir is the directory holding the server's config, data and logs.
func (p *PrivateClickHouse) Dir() string { return p.dir }

// Running reports whether the server process is alive (it may not be ready
// yet only inside Start).
func (p *PrivateClickHouse) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv == nil {
		return false
	}
	select {
	case <-p.srv.exited:
		return false
	default:
		return true
	}
}

// Kill stops the server at once with SIGKILL, as a crash would, and waits
// until the process has exited. Killing a stopped server does nothing. It
// fails the test on error, so call it from the test's goroutine; elsewhere
// use KillErr.
func (p *PrivateClickHouse) Kill() {
	p.t.Helper()
	if err := p.KillErr(); err != nil {
		p.t.Fatalf("testharness: %v", err)
	}
}

// KillErr is Kill returning its error instead of failing the test.
func (p *PrivateClickHouse) KillErr() error {
	p.mu.Lock()
	s := p.srv
	p.mu.Unlock()
	if s == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("private clickhouse-server pid %d: kill: %w", s.Pid(), err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(localStopGrace):
		return fmt.Errorf("private clickhouse-server pid %d: still running %v after SIGKILL", s.Pid(), localStopGrace)
	}
}

// Start starts the server again after Kill, on the same port with the same
// data directory, and returns once it answers a native Ping: what was
// written before the kill and made durable is there again. Starting a
// running server fails the test. It fails the test on error, so call it
// from the test's goroutine; elsewhere use StartErr.
func (p *PrivateClickHouse) Start() {
	p.t.Helper()
	if err := p.StartErr(); err != nil {
		p.t.Fatalf("testharness: %v", err)
	}
}

// StartErr is Start returning its error instead of failing the test. The
// port may still be held for a moment by the killed process's sockets; it
// retries for about privateRestartAttempts*privateRestartWait.
func (p *PrivateClickHouse) StartErr() error {
	if p.Running() {
		return fmt.Errorf("private clickhouse-server on %s: Start while it is running (Kill it first)", p.Addr)
	}
	var err error
	for attempt := 1; attempt <= privateRestartAttempts; attempt++ {
		err = p.launch(p.server())
		if err == nil || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
		time.Sleep(privateRestartWait)
	}
	return err
}

// launch starts s's process and waits until it is ready; on failure the
// process is killed and the error carries the tail of its logs.
func (p *PrivateClickHouse) launch(s *localServer) error {
	if err := s.startProcess(); err != nil {
		return err
	}
	p.mu.Lock()
	p.srv = s
	p.mu.Unlock()
	if err := s.waitReady(context.Background()); err != nil {
		tail := s.logTail()
		_ = p.KillErr()
		return fmt.Errorf("clickhouse-server %s on %s: %w\n--- server log tail ---\n%s", s.Binary, s.Addr(), err, tail)
	}
	return nil
}
