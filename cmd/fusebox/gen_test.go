package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

var summaryRE = regexp.MustCompile(`^(done|stopped): (\d+) LLM spans and (\d+) other spans in (\d+) messages to (\S+) \((\S+)\), (\d+) corrections to (\S+),`)

// parseSummary reads the summary line of `fusebox gen`.
func parseSummary(t *testing.T, stdout string) (how string, spans, other, msgs, corrections int64) {
	t.Helper()
	m := summaryRE.FindStringSubmatch(strings.TrimSpace(stdout))
	if m == nil {
		t.Fatalf("stdout %q is not a gen summary", stdout)
	}
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	return m[1], n(m[2]), n(m[3]), n(m[4]), n(m[7])
}

func TestKafkaGenCommandPublishes(t *testing.T) {
	k := testharness.StartBroker(t)
	code, stdout, stderr := runCmd(t, "gen", "--brokers", k.Brokers[0], "--seed", "3", "--rate", "100", "--duration", "20s",
		"--speedup", "0", "--start", "2025-03-04T10:00:00Z", "--encoding", "otlp_json", "--spans-topic", "spans",
		"--corrections-topic", "corr", "--progress-every", "0")
	if code != exitOK {
		t.Fatalf("gen: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	how, spans, other, msgs, corr := parseSummary(t, stdout)
	if how != "done" || spans != 2000 || other == 0 || corr == 0 {
		t.Errorf("summary %q: want done with 2000 LLM spans (100/s for 20 s), other spans and corrections", stdout)
	}
	if !strings.Contains(stdout, "event time 2025-03-04T10:00:00Z to 2025-03-04T10:00:20Z") {
		t.Errorf("summary lacks the event-time range: %s", stdout)
	}
	if got := k.TopicRecords(t, "spans"); got != msgs {
		t.Errorf("topic spans holds %d records, summary says %d", got, msgs)
	}
	if got := k.TopicRecords(t, "corr"); got != corr {
		t.Errorf("topic corr holds %d records, summary says %d", got, corr)
	}
	for _, r := range k.ReadAll(t, "spans", 1, 30*time.Second) {
		if _, _, err := schemas.DecodeOTLPJSON(r.Value, schemas.AttributeNames{}, schemas.Limits{}, nil); err != nil {
			t.Errorf("--encoding otlp_json wrote a record that does not decode as OTLP/JSON: %v", err)
		}
	}
	for _, want := range []string{"scenario demo, seed 3, 100 calls/s, 20s of event time", "unpaced", "spans and corr on " + k.Brokers[0]} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestKafkaGenCommandSCRAM(t *testing.T) {
	k := testharness.StartBroker(t, testharness.WithSASL(testharness.SASLUser{Mechanism: "SCRAM-SHA-256", User: "gen", Password: "s3cret"}))
	base := []string{"gen", "--brokers", k.Brokers[0], "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "gen",
		"--duration", "2s", "--speedup", "0", "--progress-every", "0"}

	t.Setenv(envKafkaPassword, "s3cret")
	code, stdout, stderr := runCmd(t, base...)
	if code != exitOK {
		t.Fatalf("gen with the right password: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if _, spans, _, _, _ := parseSummary(t, stdout); spans != 800 {
		t.Errorf("summary %q: want 800 spans (400/s for 2 s)", stdout)
	}

	t.Setenv(envKafkaPassword, "wrong")
	code, stdout, stderr = runCmd(t, base...)
	if code != exitFailure || !strings.Contains(stderr, "no Kafka broker answers at "+k.Brokers[0]) ||
		!strings.Contains(stderr, "kafka SASL authentication failed") {
		t.Errorf("wrong password: exit %d, stderr %q; want %d and a message naming the broker and the failed authentication", code, stderr, exitFailure)
	}
	if stdout != "" || strings.Contains(stderr, "wrong") {
		t.Errorf("wrong password: stdout %q, stderr %q: want no summary and no password shown", stdout, stderr)
	}
}

func TestGenCommandUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--encoding", "avro"}, `Encoding: "avro"`},
		{[]string{"--rate", "-1"}, "--rate"},
		{[]string{"--duration", "-1s"}, "--duration"},
		{[]string{"--speedup", "-2"}, "Speedup"},
		{[]string{"--start", "yesterday"}, "--start"},
		{[]string{"--scenario", "/nonexistent.yaml"}, "--scenario"},
		{[]string{"--brokers", "nohost"}, "--brokers"},
		{[]string{"--sasl-mechanism", "GSSAPI", "--sasl-user", "u"}, "--sasl-mechanism"},
		{[]string{"--sasl-user", "u"}, "need --sasl-mechanism"},
		{[]string{"--sasl-mechanism", "PLAIN"}, "needs --sasl-user"},
		{[]string{"--tls-cert", "c.pem"}, "--tls-key"},
		{[]string{"--spans-per-message", "0"}, "--spans-per-message 0"},
		{[]string{"--corrections-topic", "otlp_spans"}, "CorrectionsTopic"},
	} {
		t.Setenv(envKafkaPassword, "")
		code, stdout, stderr := runCmd(t, append([]string{"gen"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.stderr) || stdout != "" {
			t.Errorf("gen %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.stderr)
		}
	}
}

// The example scenario loads, scripts every incident kind, and runs.
func TestExampleScenario(t *testing.T) {
	const path = "../../examples/scenario.yaml"
	sc, err := traffic.LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []traffic.Kind
	for _, inc := range sc.Incidents {
		kinds = append(kinds, inc.Kind)
	}
	for _, k := range traffic.Kinds {
		if !slices.Contains(kinds, k) {
			t.Errorf("%s has no %s incident", path, k)
		}
	}
	k := testharness.StartKafka(t)
	code, stdout, stderr := runCmd(t, "gen", "--brokers", k.Brokers[0], "--scenario", path, "--duration", "3s",
		"--speedup", "0", "--progress-every", "0", "--key-by-trace")
	if code != exitOK {
		t.Fatalf("gen --scenario: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("scenario %s, seed %d, %g calls/s", sc.Name, sc.Seed, sc.Rate)) ||
		!strings.Contains(stderr, "keyed by trace id") {
		t.Errorf("stderr does not describe the example scenario:\n%s", stderr)
	}
}

// TestGenProcessSIGINT runs `fusebox gen` as a process, interrupts it after
// its first progress line and checks a clean exit whose summary matches
// what the broker holds.
func TestGenProcessSIGINT(t *testing.T) {
	k := testharness.StartKafka(t)
	cmd := exec.Command(os.Args[0], "gen", "--brokers", k.Brokers[0], "--speedup", "120", "--progress-every", "200ms")
	cmd.Env = append(os.Environ(), envAsMain+"=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progress := make(chan string, 100)
	var stderr bytes.Buffer
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), " spans ") && strings.Contains(sc.Text(), "event ") {
				select {
				case progress <- sc.Text():
				default:
				}
			}
		}
	}()
	select {
	case line := <-progress:
		if !regexp.MustCompile(`spans \d+ \(\d+/s\)  other \d+  corrections \d+  messages \d+`).MatchString(line) {
			t.Errorf("progress line %q", line)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-scanDone
		t.Fatalf("no progress line within 60 s; stderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() { <-scanDone; waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("gen after SIGINT: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("gen did not exit after SIGINT")
	}
	how, spans, _, msgs, corr := parseSummary(t, stdout.String())
	if how != "stopped" || spans == 0 {
		t.Errorf("summary %q: want stopped with spans", stdout.String())
	}
	if got := k.TopicRecords(t, "otlp_spans"); got != msgs {
		t.Errorf("otlp_spans holds %d records, summary says %d", got, msgs)
	}
	if corr > 0 {
		if got := k.TopicRecords(t, "fusebox.corrections"); got != corr {
			t.Errorf("fusebox.corrections holds %d records, summary says %d", got, corr)
		}
	}
}

// TestGenDefaultStartNeverAhead: without --start, paced event time ends at
// the wall clock (reports "--to now" see all of it; nothing is from the
// future), unpaced it ends at the start; --start now keeps the old way.
func TestGenDefaultStartNeverAhead(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d       time.Duration
		speedup float64
		want    time.Time
	}{
		{time.Hour, 10, now.Add(-54 * time.Minute)},
		{time.Hour, 0, now.Add(-time.Hour)},
		{time.Hour, 1, now},
		{0, 10, now},
	} {
		if got := defaultGenStart(now, c.d, c.speedup); !got.Equal(c.want) {
			t.Errorf("duration %v speedup %v: start %v, want %v", c.d, c.speedup, got, c.want)
		}
	}
	k := testharness.StartKafka(t)
	before := time.Now()
	code, stdout, stderr := runCmd(t, "gen", "--brokers", k.Brokers[0], "--rate", "20", "--duration", "2m",
		"--speedup", "60", "--progress-every", "0")
	after := time.Now()
	if code != exitOK {
		t.Fatalf("gen: exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`event time (\S+) to (\S+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no event-time range in %q", stdout)
	}
	end, err := time.Parse(time.RFC3339, m[2])
	if err != nil {
		t.Fatal(err)
	}
	if end.After(after.Add(time.Second)) || end.Before(before.Add(-5*time.Second)) {
		t.Errorf("event time ended at %v; wall clock %v to %v: want it to reach the wall clock, not run ahead", end, before, after)
	}
}

// TestQuietScenarioIsTheFalseTripStudysTraffic: examples/scenario-quiet.yaml,
// the recording `fusebox calibrate` is run on before `fusebox bench
// false-trips --config` judges the proposal (docs/running.md), is the
// study's own traffic — the demo at the study's default rate, no incident —
// but for its name, seed and duration.
func TestQuietScenarioIsTheFalseTripStudysTraffic(t *testing.T) {
	sc, err := traffic.LoadScenario("../../examples/scenario-quiet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := traffic.Demo()
	want.Rate = 50 // study.FalseTripsConfig's default Rate
	want.Incidents = nil
	if len(sc.Incidents) != 0 || sc.Seed == 0 || sc.Duration < time.Hour {
		t.Fatalf("quiet scenario: %d incidents, seed %d, duration %s; want none, a seed, an hour or more", len(sc.Incidents), sc.Seed, sc.Duration)
	}
	sc.Name, sc.Seed, sc.Duration, sc.Incidents = want.Name, want.Seed, want.Duration, nil
	if !reflect.DeepEqual(*sc, want) {
		t.Fatalf("quiet scenario differs from the false-trip study's traffic:\n got %+v\nwant %+v", *sc, want)
	}
}
