package testharness

import (
	"errors"
	"strings"
	"testing"
)

// fakeMachine is the environment, PATH and Docker engine seen by
// planClickHouse in these tests.
type fakeMachine struct {
	env       map[string]string
	onPath    string          // what LookPath finds, "" for nothing
	files     map[string]bool // executable files outside PATH
	docker    error           // DockerAnswers result
	dockerAsk int             // how often DockerAnswers was called
}

func (f *fakeMachine) lookup() clickHouseLookup {
	return clickHouseLookup{
		Getenv: func(k string) string { return f.env[k] },
		LookPath: func(name string) (string, error) {
			if f.onPath == "" {
				return "", errors.New("not found")
			}
			return f.onPath, nil
		},
		IsExecutable:  func(p string) bool { return f.files[p] },
		DockerAnswers: func() error { f.dockerAsk++; return f.docker },
	}
}

func TestPlanClickHouse(t *testing.T) {
	noDocker := errors.New("cannot connect to the Docker daemon")
	tests := []struct {
		name       string
		m          fakeMachine
		wantSource clickHouseSource
		wantAddr   string
		wantBinary string
		wantFatal  bool
		wantReason []string // substrings of Reason
		wantDocker int      // DockerAnswers calls
	}{
		{
			name:       "env addr wins over everything",
			m:          fakeMachine{env: map[string]string{EnvClickHouseAddr: "10.0.0.5:9000"}, onPath: "/opt/ch/clickhouse-server"},
			wantSource: sourceAddr, wantAddr: "10.0.0.5:9000",
		},
		{
			name:       "env addr with require",
			m:          fakeMachine{env: map[string]string{EnvClickHouseAddr: " 127.0.0.1:9000 ", EnvRequireClickHouse: "1"}},
			wantSource: sourceAddr, wantAddr: "127.0.0.1:9000",
		},
		{
			name:       "binary on PATH",
			m:          fakeMachine{onPath: "/opt/ch/clickhouse-server", docker: nil},
			wantSource: sourceLocal, wantBinary: "/opt/ch/clickhouse-server",
		},
		{
			name:       "binary in /usr/sbin, not on PATH (Debian)",
			m:          fakeMachine{files: map[string]bool{"/usr/sbin/clickhouse-server": true}},
			wantSource: sourceLocal, wantBinary: "/usr/sbin/clickhouse-server",
		},
		{
			name:       "binary in /usr/bin",
			m:          fakeMachine{files: map[string]bool{"/usr/bin/clickhouse-server": true}},
			wantSource: sourceLocal, wantBinary: "/usr/bin/clickhouse-server",
		},
		{
			name:       "docker when no binary",
			m:          fakeMachine{docker: nil},
			wantSource: sourceContainer, wantDocker: 1,
		},
		{
			name:       "nothing: skip with how to enable",
			m:          fakeMachine{docker: noDocker},
			wantSource: sourceNone, wantFatal: false, wantDocker: 1,
			wantReason: []string{"apt-get install -y clickhouse-server", EnvClickHouseAddr, "cannot connect to the Docker daemon"},
		},
		{
			name:       "nothing and required: fatal",
			m:          fakeMachine{env: map[string]string{EnvRequireClickHouse: "1"}, docker: noDocker},
			wantSource: sourceNone, wantFatal: true, wantDocker: 1,
			wantReason: []string{"apt-get install", EnvRequireClickHouse},
		},
		{
			name:       "require=true spelled out",
			m:          fakeMachine{env: map[string]string{EnvRequireClickHouse: "true"}, docker: noDocker},
			wantSource: sourceNone, wantFatal: true, wantDocker: 1,
		},
		{
			name:       "require=0 skips",
			m:          fakeMachine{env: map[string]string{EnvRequireClickHouse: "0"}, docker: noDocker},
			wantSource: sourceNone, wantFatal: false, wantDocker: 1,
		},
		{
			name:       "CI=true alone does not require",
			m:          fakeMachine{env: map[string]string{"CI": "true"}, docker: noDocker},
			wantSource: sourceNone, wantFatal: false, wantDocker: 1,
		},
		{
			name:       "malformed require is fatal and named",
			m:          fakeMachine{env: map[string]string{EnvRequireClickHouse: "yes please"}, onPath: "/x/clickhouse-server"},
			wantSource: sourceNone, wantFatal: true,
			wantReason: []string{EnvRequireClickHouse, `"yes please"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			got := planClickHouse(m.lookup())
			if got.Source != tc.wantSource {
				t.Fatalf("source = %v, want %v (reason %q)", got.Source, tc.wantSource, got.Reason)
			}
			if got.Addr != tc.wantAddr || got.Binary != tc.wantBinary {
				t.Errorf("addr, binary = %q, %q; want %q, %q", got.Addr, got.Binary, tc.wantAddr, tc.wantBinary)
			}
			if got.Fatal != tc.wantFatal {
				t.Errorf("fatal = %v, want %v", got.Fatal, tc.wantFatal)
			}
			for _, s := range tc.wantReason {
				if !strings.Contains(got.Reason, s) {
					t.Errorf("reason %q lacks %q", got.Reason, s)
				}
			}
			if m.dockerAsk != tc.wantDocker {
				t.Errorf("DockerAnswers called %d times, want %d", m.dockerAsk, tc.wantDocker)
			}
		})
	}
}

func TestParseClickHouseAddr(t *testing.T) {
	tests := []struct {
		in                       string
		addr, db, user, password string
		err                      string
	}{
		{in: "127.0.0.1:9000", addr: "127.0.0.1:9000", db: "default", user: "default"},
		{in: "clickhouse://u:p@ch.internal:9440/analytics", addr: "ch.internal:9440", db: "analytics", user: "u", password: "p"},
		{in: "clickhouse://ch:9000", addr: "ch:9000", db: "default", user: "default"},
		{in: "localhost", err: EnvClickHouseAddr},
		{in: "clickhouse://a:9000,b:9000", err: "exactly one host"},
	}
	for _, tc := range tests {
		got, err := parseClickHouseAddr(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want one naming %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got.Addr != tc.addr || got.Database != tc.db || got.Username != tc.user || got.Password != tc.password {
			t.Errorf("%q: got %+v", tc.in, got)
		}
	}
}
