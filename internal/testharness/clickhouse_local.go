package testharness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// Limits of the harness's own clickhouse-server.
const (
	// localReadyTimeout bounds the wait for the first successful native
	// Ping after start. 18.16 is ready in under a second; the margin is for
	// a loaded 2-core machine.
	localReadyTimeout = 60 * time.Second
	// localStopGrace is how long the server gets to exit after SIGTERM
	// before it is killed.
	localStopGrace = 15 * time.Second
	// localStartAttempts retries a start that lost its port to another
	// process between choosing it and binding it.
	localStartAttempts = 3
	// logTailLines is how much of the server's logs a start failure shows.
	logTailLines = 40
)

// localServer is a clickhouse-server child process with its config, data and
// logs in one temporary directory, listening on a loopback port.
type localServer struct {
	Binary string
	Dir    string
	Port   int

	serverProcess
}

// Addr is the native-protocol address, "127.0.0.1:PORT".
func (s *localServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// startProcess starts clickhouse-server on s.Dir's config, its output
// appended to log/console.log, with Pdeathsig (see serverProcess.start).
func (s *localServer) startProcess() error {
	cmd := exec.Command(s.Binary, "--config-file="+filepath.Join(s.Dir, "config.xml"))
	cmd.Dir = s.Dir
	if err := s.start(cmd, filepath.Join(s.Dir, "log", "console.log")); err != nil {
		return fmt.Errorf("clickhouse-server: %w", err)
	}
	return nil
}

// Pid is the server's process id.
func (s *localServer) Pid() int { return s.cmd.Process.Pid }

// startLocalServer starts binary on a free loopback port and returns once a
// native Ping succeeds. On failure the temporary directory is removed and the
// error carries the tail of the server's logs.
func startLocalServer(ctx context.Context, binary string) (*localServer, error) {
	var lastErr error
	for attempt := 1; attempt <= localStartAttempts; attempt++ {
		s, err := startLocalServerOnce(ctx, binary)
		if err == nil {
			return s, nil
		}
		lastErr = err
		// Only a port lost to a race is worth another try.
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

func startLocalServerOnce(ctx context.Context, binary string) (*localServer, error) {
	dir, err := os.MkdirTemp("", "fusebox-clickhouse-")
	if err != nil {
		return nil, fmt.Errorf("clickhouse-server: temp dir: %w", err)
	}
	port, err := freeLoopbackPort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &localServer{Binary: binary, Dir: dir, Port: port}
	if err := s.writeConfig(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.startProcess(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.waitReady(ctx); err != nil {
		tail := s.logTail()
		_ = s.Stop()
		return nil, fmt.Errorf("clickhouse-server %s on %s: %w\n--- server log tail ---\n%s", binary, s.Addr(), err, tail)
	}
	return s, nil
}

// waitReady polls a native Ping until it answers, the process exits, or
// localReadyTimeout passes.
func (s *localServer) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, localReadyTimeout)
	defer cancel()
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{s.Addr()},
		DialTimeout: time.Second,
		ReadTimeout: 5 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer conn.Close()
	var pingErr error
	for {
		if err := s.exitedBeforeReady(); err != nil {
			return err
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		pingErr = conn.Ping(pctx)
		pcancel()
		if pingErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: last ping: %w", localReadyTimeout, pingErr)
		case <-s.exited:
			return fmt.Errorf("exited before it was ready (%v)", s.waitErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM, waits up to localStopGrace, then SIGKILL, waits for the
// process to be reaped, and removes the temporary directory. It is safe to
// call more than once.
func (s *localServer) Stop() error {
	var err error
	if s.stop(localStopGrace) {
		err = fmt.Errorf("clickhouse-server pid %d did not exit within %v of SIGTERM; killed", s.Pid(), localStopGrace)
	}
	if rmErr := os.RemoveAll(s.Dir); rmErr != nil && err == nil {
		err = fmt.Errorf("clickhouse-server: remove %s: %w", s.Dir, rmErr)
	}
	return err
}

// logTail returns the last lines of the server's error log and console.
func (s *localServer) logTail() string {
	var b strings.Builder
	for _, name := range []string{"server.err.log", "console.log"} {
		data, err := os.ReadFile(filepath.Join(s.Dir, "log", name))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > logTailLines {
			lines = lines[len(lines)-logTailLines:]
		}
		fmt.Fprintf(&b, "[%s]\n%s\n", name, strings.Join(lines, "\n"))
	}
	if b.Len() == 0 {
		return "(no log output)"
	}
	return b.String()
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1. Another
// process can take it before the server binds it; startLocalServer retries.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("clickhouse-server: choose a port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *localServer) writeConfig() error {
	for _, sub := range []string{"log", "data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, sub), 0o755); err != nil {
			return fmt.Errorf("clickhouse-server: %w", err)
		}
	}
	vars := struct {
		Dir  string
		Port int
	}{s.Dir, s.Port}
	for name, tmpl := range map[string]*template.Template{"config.xml": configXML, "users.xml": usersXML} {
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, vars); err != nil {
			return fmt.Errorf("clickhouse-server: render %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, name), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("clickhouse-server: write %s: %w", name, err)
		}
	}
	return nil
}

// The config works on Debian's 18.16 and on current servers (which still
// accept the <yandex> root). Only the native port is opened: clickhouse-go's
// HTTP protocol does not work with 18.16, and fewer ports mean fewer races.
var configXML = template.Must(template.New("config.xml").Parse(`<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{{.Dir}}/log/server.log</log><errorlog>{{.Dir}}/log/server.err.log</errorlog><size>100M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>{{.Port}}</tcp_port>
  <max_concurrent_queries>100</max_concurrent_queries>
  <mark_cache_size>268435456</mark_cache_size>
  <path>{{.Dir}}/data/</path>
  <tmp_path>{{.Dir}}/tmp/</tmp_path>
  <user_files_path>{{.Dir}}/user_files/</user_files_path>
  <format_schema_path>{{.Dir}}/format_schemas/</format_schema_path>
  <users_config>{{.Dir}}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <shutdown_wait_unfinished>1</shutdown_wait_unfinished>
</yandex>
`))

// allow_experimental_low_cardinality_type lets 18.16 create LowCardinality
// columns; newer servers ignore it as an obsolete setting. poll_interval=1 (s)
// lets an idle connection notice a shutdown within a second instead of 10, and
// shutdown_wait_unfinished=1 (s) in config.xml bounds the wait for running
// queries, so stopping the server takes about a second.
var usersXML = template.Must(template.New("users.xml").Parse(`<?xml version="1.0"?>
<yandex>
  <profiles><default>
    <max_memory_usage>4000000000</max_memory_usage>
    <allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type>
    <poll_interval>1</poll_interval>
  </default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`))
