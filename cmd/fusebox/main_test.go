package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/fusebox-dev/fusebox/internal/broker"
	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// envAsMain makes the test binary behave as the fusebox binary, so tests can
// run it as a process and send it signals without building it separately.
const envAsMain = "FUSEBOX_TEST_AS_MAIN"

// TestMain runs the test binary as fusebox itself when envAsMain is set (a
// test starting `fusebox` as a process), else runs the tests through
// testharness.Main, which stops the ClickHouse server the CLI tests share.
func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		if os.Getenv(envPlantLeak) != "" {
			go plantLeak()
		}
		main()
		return
	}
	testharness.Main(m)
}

// startPiped starts `fusebox args...` as a process (this test binary,
// envAsMain set), its stderr into stderr, and returns it with its stdout
// to read. It is killed at the end of the test if still running.
func startPiped(t *testing.T, stderr io.Writer, args ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envAsMain+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, stdout
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		stdout     []string
		stderr     []string
		stdoutNone bool
	}{
		{args: nil, code: exitUsage, stderr: []string{"Usage:", "broker", "version", "run"}, stdoutNone: true},
		{args: []string{"help"}, code: exitOK, stdout: []string{"Usage:", "fusebox <command> [flags]", "broker", "version", "run"}},
		{args: []string{"--help"}, code: exitOK, stdout: []string{"Usage:"}},
		{args: []string{"help", "help"}, code: exitOK, stdout: []string{"Usage:"}},
		{args: []string{"frobnicate"}, code: exitUsage, stderr: []string{`unknown command "frobnicate"; see fusebox help`}, stdoutNone: true},
		{args: []string{"brokr"}, code: exitUsage, stderr: []string{`unknown command "brokr" (did you mean broker?)`}, stdoutNone: true},
		{args: []string{"--brokers", "x"}, code: exitUsage, stderr: []string{"unknown flag --brokers (flags come after the command"}, stdoutNone: true},
		{args: []string{"help", "frobnicate"}, code: exitUsage, stderr: []string{`unknown command "frobnicate"`}},
		{args: []string{"help", "broker"}, code: exitOK, stdout: []string{"Usage: fusebox broker", "--data-dir", "--sasl-user", "--topic"}},
		{args: []string{"help", "config", "check"}, code: exitOK, stdout: []string{"Usage: fusebox config check", "--fuse-keys"}},
		{args: []string{"broker", "-h"}, code: exitOK, stdout: []string{"--listen"}},
		{args: []string{"version"}, code: exitOK, stdout: []string{"fusebox ", "go      go1.", "module  github.com/fusebox-dev/fusebox"}},
		{args: []string{"--version"}, code: exitOK, stdout: []string{"fusebox ", "go      go1.", "module  github.com/fusebox-dev/fusebox"}},
		{args: []string{"-version"}, code: exitOK, stdout: []string{"module  github.com/fusebox-dev/fusebox"}},
		{args: []string{"version", "extra"}, code: exitUsage, stderr: []string{`unexpected argument "extra"`}},
		{args: []string{"version", "--nope"}, code: exitUsage, stderr: []string{"fusebox version: unknown flag --nope; see fusebox version -h"}},
		{args: []string{"run"}, code: exitUsage, stderr: []string{"--config FILE is required (or $FUSEBOX_CONFIG)"}},
		{args: []string{"run", "--brokr", "x"}, code: exitUsage, stderr: []string{"fusebox run: unknown flag --brokr (did you mean --brokers?); see fusebox run -h"}},
		{args: []string{"gen", "--sped", "2"}, code: exitUsage, stderr: []string{"fusebox gen: unknown flag --sped (did you mean --seed?); see fusebox gen -h"}},
		{args: []string{"demo", "--headles"}, code: exitUsage, stderr: []string{"unknown flag --headles (did you mean --headless?)"}},
		{args: []string{"report", "--databse", "x"}, code: exitUsage, stderr: []string{"unknown flag --databse (did you mean --database?)"}},
		{args: []string{"config", "check", "x.yaml", "--fuse-key", "k"}, code: exitUsage, stderr: []string{"unknown flag --fuse-key (did you mean --fuse-keys?)"}},
		{args: []string{"broker", "--partitions"}, code: exitUsage, stderr: []string{"flag needs an argument: --partitions"}},
		{args: []string{"broker", "--partitions", "many"}, code: exitUsage, stderr: []string{`invalid value "many" for flag --partitions`}},
		{args: []string{"broker", "--topic", "t:0"}, code: exitUsage, stderr: []string{"--topic", "partitions must be between 1 and"}},
		{args: []string{"broker", "--sasl-user", "GSSAPI:u:p"}, code: exitUsage, stderr: []string{"--sasl-user", "mechanism must be PLAIN"}},
		{args: []string{"broker", "--sync-writes"}, code: exitUsage, stderr: []string{"--sync-writes", "needs --data-dir"}},
		{args: []string{"broker", "--listen", "nohost"}, code: exitUsage, stderr: []string{"--listen", "host:port"}},
		{args: []string{"broker", "--log-level", "loud"}, code: exitUsage, stderr: []string{"--log-level"}},
		{args: []string{"broker", "--partitions", "0"}, code: exitUsage, stderr: []string{"--partitions"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tc.stdoutNone && stdout != "" {
				t.Errorf("stdout should be empty on a usage error:\n%s", stdout)
			}
			// A bad command line is one line, not the usage (except with
			// no command at all).
			if code == exitUsage && len(tc.args) > 0 && strings.Count(stderr, "\n") != 1 {
				t.Errorf("a usage error of %d lines, want 1:\n%s", strings.Count(stderr, "\n"), stderr)
			}
		})
	}
}

// TestHelpListsEveryCommand: `fusebox help` lists every command, and for
// each of them (and each config subcommand and bench study) -h, -help,
// --help and `fusebox help CMD` print its usage to stdout — with flags
// spelt --flag, as docs/cli.md spells them — write nothing to stderr and
// exit 0.
func TestHelpListsEveryCommand(t *testing.T) {
	_, stdout, _ := runCmd(t, "help")
	for _, c := range commands {
		if !strings.Contains(stdout, c.name+" ") || !strings.Contains(stdout, c.summary) {
			t.Errorf("help does not list %s with its summary", c.name)
		}
	}
	singleDash := regexp.MustCompile(`(?m)^  -[a-z]`)
	for _, cmd := range helpTargets() {
		name := strings.Join(cmd, " ")
		for _, args := range [][]string{
			append(slices.Clone(cmd), "-h"), append(slices.Clone(cmd), "-help"), append(slices.Clone(cmd), "--help"),
			append([]string{"help"}, cmd...),
		} {
			code, stdout, stderr := runCmd(t, args...)
			if code != exitOK || stderr != "" || !strings.Contains(stdout, "Usage: fusebox "+name) {
				t.Errorf("%v: exit %d, stderr %q, stdout %.200q; want exit 0, usage on stdout", args, code, stderr, stdout)
			}
			if singleDash.MatchString(stdout) {
				t.Errorf("%v: a flag spelt -flag in the help:\n%s", args, stdout)
			}
		}
	}
}

// helpTargets is every command line that has a usage: each command, each
// config subcommand and each bench study.
func helpTargets() [][]string {
	var out [][]string
	for _, c := range commands {
		out = append(out, []string{c.name})
	}
	return append(out, []string{"config", "check"}, []string{"config", "diff"}, []string{"openslo", "export"}, []string{"openslo", "import"},
		[]string{"bench", "tail-accuracy"}, []string{"bench", "false-trips"}, []string{"bench", "sequential"}, []string{"bench", "drift-peers"}, []string{"bench", "loop"}, []string{"bench", "soak"})
}

// lineWriter hands the lines written to it to a channel, for reading the
// broker's "listening on" while it runs.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line) // keep the partial line
			return len(p), nil
		}
		select {
		case w.lines <- strings.TrimSpace(line):
		default:
		}
	}
}

func TestBrokerCommandInProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &lineWriter{lines: make(chan string, 10)}
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"broker", "--listen", "127.0.0.1:0", "--partitions", "2",
			"--topic", "fusebox.fuse:6:cleanup.policy=compact", "--topic", "otlp_spans:3",
			"--sasl-user", "SCRAM-SHA-256:gw:s3cret:x"}, stdout, &stderr)
	}()
	addr := waitListening(t, stdout.lines, done)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(brokerMechanism("SCRAM-SHA-256:gw:s3cret:x")),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "otlp_spans", Value: []byte("x")}, &kgo.Record{Topic: "auto", Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]int{"fusebox.fuse": 6, "otlp_spans": 3, "auto": 2} {
		if got := len(details[topic].Partitions); got != want {
			t.Errorf("%s: %d partitions, want %d", topic, got, want)
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "fusebox.fuse")
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := rcs.On("fusebox.fuse", nil); err != nil || !hasConfig(rc, "cleanup.policy", "compact") {
		t.Errorf("fusebox.fuse configs %+v, %v: want cleanup.policy=compact", rc.Configs, err)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("broker exit %d after cancel, want 0; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("broker did not return after its context was cancelled")
	}
	if strings.Contains(stderr.String(), "s3cret") {
		t.Errorf("stderr shows a password:\n%s", stderr.String())
	}
}

func hasConfig(rc kadm.ResourceConfig, k, v string) bool {
	for _, c := range rc.Configs {
		if c.Key == k && c.Value != nil && *c.Value == v {
			return true
		}
	}
	return false
}

func waitListening(t *testing.T, lines <-chan string, done <-chan int) string {
	t.Helper()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			t.Fatalf("first stdout line %q, want \"listening on HOST:PORT\"", line)
		}
		return addr
	case code := <-done:
		t.Fatalf("broker exited %d before listening", code)
	case <-time.After(30 * time.Second):
		t.Fatal("broker did not print its address")
	}
	return ""
}

// TestBrokerProcessSIGTERMKeepsData runs `fusebox broker --data-dir` as a
// process, produces, stops it with SIGTERM (exit 0), starts it again on the
// same directory and reads the records back.
func TestBrokerProcessSIGTERMKeepsData(t *testing.T) {
	dir := t.TempDir()
	want := []string{}
	for round := 0; round < 2; round++ {
		var stderr bytes.Buffer
		cmd, stdout := startPiped(t, &stderr, "broker", "--listen", "127.0.0.1:0", "--data-dir", dir, "--topic", "keep:2")
		lines := make(chan string, 10)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		exited := make(chan int, 1)
		go func() {
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			exited <- code
		}()
		addr := waitListening(t, lines, exited)

		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("keep"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		// Records from earlier rounds are still there.
		var got []string
		for len(got) < len(want) && ctx.Err() == nil {
			got = append(got, recordValues(cl.PollFetches(ctx).Records())...)
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
			t.Errorf("round %d: read %v, want %v", round, got, want)
		}
		for i := 0; i < 10; i++ {
			v := fmt.Sprintf("r%d-%d", round, i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "keep", Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			want = append(want, v)
		}
		cancel()
		cl.Close()

		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-exited:
			if code != 0 {
				t.Fatalf("round %d: exit %d after SIGTERM; stderr:\n%s", round, code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("round %d: broker did not exit after SIGTERM", round)
		}
		if !strings.Contains(stderr.String(), "stopped") {
			t.Errorf("round %d: stderr does not report a clean stop:\n%s", round, stderr.String())
		}
	}
}

func recordValues(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func brokerMechanism(spec string) sasl.Mechanism {
	u, err := broker.ParseSASLUser(spec)
	if err != nil {
		panic(err)
	}
	return broker.Mechanism(u)
}
