package testharness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Environment variables that steer where tests find ClickHouse.
const (
	// EnvClickHouseAddr names a running server to use instead of starting
	// one: "host:port" of the native protocol (user "default", no
	// password), or a clickhouse-go DSN such as
	// "clickhouse://user:pass@host:9000".
	EnvClickHouseAddr = "FUSEBOX_CLICKHOUSE_ADDR"
	// EnvRequireClickHouse, when true ("1", "true"), turns the skip that
	// happens when no ClickHouse can be found into a test failure. CI sets
	// it so that no ClickHouse test silently skips.
	EnvRequireClickHouse = "FUSEBOX_REQUIRE_CLICKHOUSE"
)

// clickHouseServerBinary is the program the harness starts itself.
const clickHouseServerBinary = "clickhouse-server"

// clickHouseExtraDirs are searched after PATH: Debian installs the server in
// /usr/sbin, which is not on every user's PATH.
var clickHouseExtraDirs = []string{"/usr/sbin", "/usr/bin", "/usr/local/bin"}

// clickHouseSource says where the harness gets its ClickHouse from.
type clickHouseSource int

const (
	sourceNone      clickHouseSource = iota // no ClickHouse: skip (or fail when required)
	sourceAddr                              // FUSEBOX_CLICKHOUSE_ADDR
	sourceLocal                             // clickhouse-server started by the harness
	sourceContainer                         // testcontainers-go on a Docker engine
)

func (s clickHouseSource) String() string {
	switch s {
	case sourceAddr:
		return EnvClickHouseAddr
	case sourceLocal:
		return "local clickhouse-server"
	case sourceContainer:
		return "testcontainers"
	default:
		return "none"
	}
}

// clickHouseLookup is what the decision reads from the machine, injectable so
// the decision itself can be tested without changing the machine.
type clickHouseLookup struct {
	// Getenv reads an environment variable (os.Getenv).
	Getenv func(string) string
	// LookPath finds an executable on PATH (exec.LookPath).
	LookPath func(string) (string, error)
	// IsExecutable reports whether a path is an executable regular file.
	IsExecutable func(string) bool
	// DockerAnswers returns nil when a Docker engine answers. It is called
	// only when neither the env var nor a local binary decides.
	DockerAnswers func() error
}

// systemLookup reads the real environment, PATH and Docker engine.
func systemLookup() clickHouseLookup {
	return clickHouseLookup{
		Getenv:   os.Getenv,
		LookPath: exec.LookPath,
		IsExecutable: func(p string) bool {
			fi, err := os.Stat(p)
			return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
		},
		DockerAnswers: dockerAnswers,
	}
}

// clickHousePlan is the decision: where ClickHouse comes from, or why there
// is none and whether that is a skip or a failure.
type clickHousePlan struct {
	Source clickHouseSource
	// Addr is the value of FUSEBOX_CLICKHOUSE_ADDR (sourceAddr).
	Addr string
	// Binary is the clickhouse-server path (sourceLocal).
	Binary string
	// Reason explains sourceNone (or a bad env var) to the person reading
	// the test output, including how to enable ClickHouse.
	Reason string
	// Fatal is true when the reason must fail the test rather than skip
	// it: FUSEBOX_REQUIRE_CLICKHOUSE is set, or an env var is malformed.
	Fatal bool
}

// planClickHouse decides, in order: FUSEBOX_CLICKHOUSE_ADDR; clickhouse-server
// on PATH or in /usr/sbin, /usr/bin, /usr/local/bin; a Docker engine that
// answers; else none, which skips unless FUSEBOX_REQUIRE_CLICKHOUSE is true.
func planClickHouse(l clickHouseLookup) clickHousePlan {
	require := false
	if v := strings.TrimSpace(l.Getenv(EnvRequireClickHouse)); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return clickHousePlan{Source: sourceNone, Fatal: true,
				Reason: fmt.Sprintf("%s=%q is not a boolean (use 1 or 0)", EnvRequireClickHouse, v)}
		}
		require = b
	}
	if addr := strings.TrimSpace(l.Getenv(EnvClickHouseAddr)); addr != "" {
		return clickHousePlan{Source: sourceAddr, Addr: addr}
	}
	if bin := findClickHouseServer(l); bin != "" {
		return clickHousePlan{Source: sourceLocal, Binary: bin}
	}
	dockerErr := l.DockerAnswers()
	if dockerErr == nil {
		return clickHousePlan{Source: sourceContainer}
	}
	reason := fmt.Sprintf("no ClickHouse for this test: %s is not set, %s is neither on PATH nor in %s, "+
		"and no Docker engine answers (%v). To enable: install clickhouse-server "+
		"(Debian/Ubuntu: apt-get install -y clickhouse-server), or set %s=host:9000 to a running server",
		EnvClickHouseAddr, clickHouseServerBinary, strings.Join(clickHouseExtraDirs, ", "), dockerErr, EnvClickHouseAddr)
	if require {
		reason += fmt.Sprintf("; failing instead of skipping because %s is set", EnvRequireClickHouse)
	}
	return clickHousePlan{Source: sourceNone, Reason: reason, Fatal: require}
}

// findClickHouseServer returns the clickhouse-server path, or "".
func findClickHouseServer(l clickHouseLookup) string {
	if p, err := l.LookPath(clickHouseServerBinary); err == nil && p != "" {
		return p
	}
	for _, dir := range clickHouseExtraDirs {
		p := filepath.Join(dir, clickHouseServerBinary)
		if l.IsExecutable(p) {
			return p
		}
	}
	return ""
}
