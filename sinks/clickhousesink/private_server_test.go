package clickhousesink

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	chgo "github.com/ClickHouse/clickhouse-go/v2"
)

// privateServer is a clickhouse-server of this test alone, which the test
// may stop and start again (same port, same data) to simulate an outage.
// The shared harness server cannot be stopped: other tests use it.
type privateServer struct {
	t      *testing.T
	binary string
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

func (p *privateServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// startPrivateServer starts clickhouse-server from PATH or /usr/sbin with a
// config in a temporary directory. Without the binary the test fails when
// FUSEBOX_REQUIRE_CLICKHOUSE or CI is set, else it is skipped.
func startPrivateServer(t *testing.T) *privateServer {
	t.Helper()
	bin, err := exec.LookPath("clickhouse-server")
	if err != nil {
		for _, c := range []string{"/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server", "/usr/local/bin/clickhouse-server"} {
			if _, serr := os.Stat(c); serr == nil {
				bin, err = c, nil
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("FUSEBOX_REQUIRE_CLICKHOUSE") != "" || os.Getenv("CI") != "" {
			t.Fatalf("the outage test needs a clickhouse-server binary it can stop and start: %v", err)
		}
		t.Skipf("no clickhouse-server binary to stop and start: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := &privateServer{t: t, binary: bin, dir: t.TempDir(), port: port}
	for _, sub := range []string{"log", "data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(p.dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>%[1]s/log/server.log</log><errorlog>%[1]s/log/server.err.log</errorlog><size>100M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>%[2]d</tcp_port>
  <max_concurrent_queries>100</max_concurrent_queries>
  <mark_cache_size>268435456</mark_cache_size>
  <path>%[1]s/data/</path>
  <tmp_path>%[1]s/tmp/</tmp_path>
  <user_files_path>%[1]s/user_files/</user_files_path>
  <format_schema_path>%[1]s/format_schemas/</format_schema_path>
  <users_config>%[1]s/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
</yandex>
`, p.dir, p.port)
	users := `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`
	if err := os.WriteFile(filepath.Join(p.dir, "config.xml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "users.xml"), []byte(users), 0o644); err != nil {
		t.Fatal(err)
	}
	p.start()
	t.Cleanup(p.kill)
	return p
}

// start runs the server and waits until it answers a ping.
func (p *privateServer) start() {
	p.t.Helper()
	console, err := os.OpenFile(filepath.Join(p.dir, "log", "console.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(p.binary, "--config-file="+filepath.Join(p.dir, "config.xml"))
	p.cmd.Dir = p.dir
	p.cmd.Stdout, p.cmd.Stderr = console, console
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	p.exited = exited
	go func() { _ = p.cmd.Wait(); console.Close(); close(exited) }()
	conn, err := chgo.Open(&chgo.Options{Addr: []string{p.Addr()}, DialTimeout: time.Second})
	if err != nil {
		p.t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := conn.Ping(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(p.dir, "log", "server.err.log"))
			p.t.Fatalf("clickhouse-server exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("clickhouse-server on %s not ready: %v", p.Addr(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill stops the server at once (SIGKILL, as a crash) and waits for it.
func (p *privateServer) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}
