package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// TestRunOverridePrecedence: for each of the four settings, a flag wins
// over its environment variable, which wins over the file; an empty
// variable is unset; an explicitly empty --listen turns the listener off.
func TestRunOverridePrecedence(t *testing.T) {
	file := "kafka: {brokers: [\"10.0.0.1:9092\"]}\nsinks: {clickhouse: {addr: [\"10.0.0.2:9000\"]}}\nhttp: {listen: \"127.0.0.1:7000\"}\nlog: {level: error}\n" +
		"slos:\n  - name: a\n    tail: {budget: 100}\n"
	path := writeFile(t, t.TempDir(), "f.yaml", file)
	type want struct{ brokers, clickhouse, listen, level string }
	for _, tc := range []struct {
		name  string
		flags []string
		env   map[string]string
		want  want
	}{
		{"file", nil, nil, want{"10.0.0.1:9092", "10.0.0.2:9000", "127.0.0.1:7000", "error"}},
		{"env over file", nil,
			map[string]string{"FUSEBOX_BROKERS": "b1:9092,b2:9092", "FUSEBOX_CLICKHOUSE": "ch:9000", "FUSEBOX_LISTEN": ":9464", "FUSEBOX_LOG_LEVEL": "debug"},
			want{"b1:9092,b2:9092", "ch:9000", ":9464", "debug"}},
		{"flags over env", []string{"--brokers", "f1:9092", "--clickhouse", "fch:9000", "--listen", "127.0.0.1:0", "--log-level", "warn"},
			map[string]string{"FUSEBOX_BROKERS": "b1:9092", "FUSEBOX_CLICKHOUSE": "ch:9000", "FUSEBOX_LISTEN": ":9464", "FUSEBOX_LOG_LEVEL": "debug"},
			want{"f1:9092", "fch:9000", "127.0.0.1:0", "warn"}},
		{"empty env is unset", nil, map[string]string{"FUSEBOX_BROKERS": "", "FUSEBOX_LOG_LEVEL": ""},
			want{"10.0.0.1:9092", "10.0.0.2:9000", "127.0.0.1:7000", "error"}},
		{"empty --listen", []string{"--listen", ""}, map[string]string{"FUSEBOX_LISTEN": ":9464"},
			want{"10.0.0.1:9092", "10.0.0.2:9000", "", "error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("run", "", "", new(strings.Builder))
			for _, o := range runOverrides {
				fs.String(o.flag, "", o.usage)
			}
			if err := fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			f, err := config.LoadWith(path, runConfigOverrides(fs, lookup)...)
			if err != nil {
				t.Fatal(err)
			}
			got := want{strings.Join(f.Kafka.Brokers, ","), strings.Join(f.Sinks.ClickHouse.Addr, ","), f.HTTP.Listen, f.Log.Level}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRunTakesConfigAndOverridesFromOutside runs `fusebox run` with no
// --config: $FUSEBOX_CONFIG names a file whose brokers and listen address
// are wrong and whose log level hides the INFO lines; $FUSEBOX_BROKERS is
// wrong too, --brokers right, $FUSEBOX_LISTEN and --log-level right. It
// must start (the INFO line "serving /metrics" at the env's address),
// become ready on the flag's broker, and stop with exit 0. Invalid
// overrides are reported under the flag or variable that set them.
func TestRunTakesConfigAndOverridesFromOutside(t *testing.T) {
	k := testharness.StartKafka(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "fusebox.yaml", runConfig([]string{"127.0.0.1:1"},
		"http: {listen: \"127.0.0.1:1\"}\nlog: {level: error}\nsinks: {jsonl: {path: "+filepath.Join(dir, "out.jsonl")+"}}\n"))
	t.Setenv(envConfig, cfg)
	t.Setenv("FUSEBOX_BROKERS", "127.0.0.1:2")
	t.Setenv("FUSEBOX_LISTEN", "127.0.0.1:0")
	t.Setenv("FUSEBOX_LOG_LEVEL", "")
	t.Setenv("FUSEBOX_CLICKHOUSE", "")

	for _, tc := range []struct {
		args  []string
		env   [2]string
		wants string
	}{
		{[]string{"--brokers", "nohost"}, [2]string{}, `--brokers: kafka.brokers[0]: want host:port, got "nohost"`},
		{nil, [2]string{"FUSEBOX_LOG_LEVEL", "loud"}, "$FUSEBOX_LOG_LEVEL: log.level: must be debug, info, warn or error"},
	} {
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], tc.env[1])
		}
		code, _, stderr := runCmd(t, append([]string{"run", "--insecure-unsigned"}, tc.args...)...)
		if code != exitFailure || !strings.Contains(stderr, tc.wants) {
			t.Errorf("run %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, exitFailure, tc.wants)
		}
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], "")
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr, addr, done := startRun(t, ctx, "--insecure-unsigned", "--brokers", strings.Join(k.Brokers, ","), "--log-level", "info")
	if strings.HasSuffix(addr, ":1") {
		t.Fatalf("listening on the file's address %s, not $FUSEBOX_LISTEN's", addr)
	}
	waitReady(t, addr)
	if b := stderr.field(t, "fusebox running", "brokers", 10*time.Second); b != strings.Join(k.Brokers, ",") {
		t.Errorf("running with brokers %q, want --brokers %q", b, strings.Join(k.Brokers, ","))
	}
	if c := stderr.field(t, "fusebox running", "config", 10*time.Second); c != cfg {
		t.Errorf("running with config %q, want $FUSEBOX_CONFIG %q", c, cfg)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after cancel; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
}
