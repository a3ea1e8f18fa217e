package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// runConfig is an SLO file for the run tests: a latency tail SLO and an
// availability burn-rate SLO whose page trips the breaker.
func runConfig(brokers []string, extra string) string {
	return "version: run-test-1\n" +
		"kafka:\n  brokers: [" + strings.Join(brokers, ", ") + "]\n" +
		"time: {idle_source_timeout: 3s, checkpoint_every: 500ms, allowed_lateness: 5s}\n" +
		"topics: {keyed_partitions: 3}\n" + extra + `
slos:
  - name: availability
    burnrate: {min_events: 50}
  - name: latency
    tail: {budget: 20000, window: 5m}
`
}

// errorBurst is a small scenario: 15 minutes at 60 calls/s with an error
// burst on acme/chat from minute 6 to 12 (a burn-rate page, a trip).
func errorBurst() traffic.Scenario {
	sc := traffic.Demo()
	sc.Rate = 60
	sc.Duration = 15 * time.Minute
	sc.Incidents = []traffic.Incident{{Name: "errors", Kind: traffic.ErrorBurst, Start: 6 * time.Minute, End: 12 * time.Minute,
		Target: traffic.Target{Tenant: "acme", Service: "chat"}, Magnitude: 0.5}}
	return sc
}

// startRun runs `fusebox run` in-process and returns its stderr, the
// address of its HTTP server and the channel of its exit code.
func startRun(t *testing.T, ctx context.Context, args ...string) (*logLines, string, <-chan int) {
	t.Helper()
	stderr := newLogLines()
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"run"}, args...), new(strings.Builder), stderr) }()
	addrc := make(chan string, 1)
	go func() {
		defer close(addrc)
		defer func() { _ = recover() }() // t.Fatal from this goroutine is reported below instead
		addrc <- stderr.field(t, "serving /metrics", "addr", 30*time.Second)
	}()
	select {
	case addr, ok := <-addrc:
		if !ok || addr == "" {
			t.Fatalf("fusebox run did not log its HTTP address; stderr:\n%s", stderr.String())
		}
		return stderr, addr, done
	case code := <-done:
		t.Fatalf("fusebox run exited %d at start; stderr:\n%s", code, stderr.String())
	}
	return nil, "", nil
}

// waitReady waits up to 30 s for /readyz on addr to answer 200.
func waitReady(t *testing.T, addr string) {
	t.Helper()
	testharness.Eventually(t, 30*time.Second, "/readyz 200", func() bool { code, _ := get(t, "http://"+addr+"/readyz"); return code == http.StatusOK })
}

// runUntilReady runs `fusebox run` in-process (startRun) until /readyz
// answers 200, then cancels it (what SIGTERM does) and fails the test
// unless it exits 0. It returns the run's stderr.
func runUntilReady(t *testing.T, args ...string) *logLines {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr, addr, done := startRun(t, ctx, args...)
	waitReady(t, addr)
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	return stderr
}

// TestKafkaRunServesMetrics runs `fusebox run` in-process on a kfake broker with
// generated traffic (and one malformed record), then scrapes /metrics over
// HTTP and checks the named series against what was published; /healthz,
// /readyz and pprof answer; the fuse commands are signed with the key
// file's key; cancelling (what SIGTERM does) exits 0.
func TestKafkaRunServesMetrics(t *testing.T) {
	k := testharness.StartBroker(t)
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "out.jsonl")
	cfg := writeFile(t, dir, "fusebox.yaml", runConfig(k.Brokers,
		"http: {listen: 127.0.0.1:0, pprof: true}\nsinks: {jsonl: {path: "+jsonl+"}}\n"))
	start := time.Now().Add(-time.Hour).Truncate(time.Minute)
	sum := publishScenario(t, k.Brokers, errorBurst(), start)
	k.Produce(t, &kgo.Record{Topic: "otlp_spans", Value: []byte("\xffnot a protobuf")})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr, addr, done := startRun(t, ctx, "--config", cfg, "--fuse-keys", testKeyFile(t, dir))

	if code, body := get(t, "http://"+addr+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	waitReady(t, addr)
	// Everything read, evaluated to the end and written: the verdicts
	// counted equal the verdicts the Kafka sink wrote, and a trip.
	var m map[string]float64
	testharness.Eventually(t, 60*time.Second, "the traffic to be processed", func() bool {
		m = scrape(t, addr)
		written := m[`fusebox_sink_records_total{destination="fusebox.verdicts",sink="kafka"}`]
		var counted float64
		for k, v := range m {
			if strings.HasPrefix(k, "fusebox_verdicts_total{") {
				counted += v
			}
		}
		wm := m[`fusebox_watermark_timestamp_seconds{partition="0",topic="fusebox.keyed"}`]
		return m[`fusebox_records_in_total{topic="otlp_spans"}`] == float64(sum.SpanMessages+1) &&
			m[`fusebox_fuse_commands_total{action="trip"}`] >= 1 && written > 0 && written == counted &&
			m[`fusebox_sink_records_total{destination="fusebox.fuse",sink="kafka"}`] > 0 &&
			wm >= float64(start.Add(14*time.Minute).Unix())
	})
	t.Logf("metrics: %v", m)
	for series, want := range map[string]float64{
		`fusebox_ready`: 1,
		`fusebox_records_in_total{topic="otlp_spans"}`:                           float64(sum.SpanMessages + 1),
		`fusebox_records_in_total{topic="fusebox.corrections"}`:                  float64(sum.CorrectionMessages),
		`fusebox_dlq_records_total{kind="malformed"}`:                            1,
		`fusebox_dlq_records_total{kind="partial"}`:                              0,
		`fusebox_dlq_records_total{kind="too_large"}`:                            0,
		`fusebox_dlq_unwritable_total{stage="router"}`:                           0,
		`fusebox_dlq_omitted_total{part="value",stage="router"}`:                 0,
		`fusebox_spans_decoded_total`:                                            float64(sum.Spans),
		`fusebox_spans_skipped_total`:                                            float64(sum.OtherSpans),
		`fusebox_duplicates_total`:                                               0,
		`fusebox_cardinality_overflows_total{dimension="tenant"}`:                0,
		`fusebox_consumer_lag_records{partition="0",topic="otlp_spans"}`:         0,
		`fusebox_sink_errors_total{destination="fusebox.verdicts",sink="kafka"}`: 0,
		`fusebox_sink_errors_total{destination="` + jsonl + `",sink="jsonl"}`:    0,
	} {
		got, ok := m[series]
		if !ok {
			t.Errorf("/metrics has no %s", series)
		} else if got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, series := range []string{
		`fusebox_records_in_total{topic="fusebox.keyed"}`,
		`fusebox_verdicts_total{processor="tail",status="ok"}`,
		`fusebox_verdicts_total{processor="burnrate",status="breach"}`,
		`fusebox_fuse_commands_total{action="trip"}`,
		`fusebox_processing_latency_seconds_count`,
		`fusebox_sink_records_total{destination="fusebox.fuse",sink="kafka"}`,
		`fusebox_checkpoints_total`,
		`fusebox_checkpoint_bytes{partition="0"}`,
		`fusebox_evaluations_total`,
	} {
		if m[series] <= 0 {
			t.Errorf("%s = %v, want > 0", series, m[series])
		}
	}
	// In-order traffic has no late spans, unless the machine is so slow
	// that a source partition's backlog waited idle_source_timeout.
	if late, ok := m["fusebox_late_spans_total"]; !ok || late > float64(sum.Spans)/10 {
		t.Errorf("fusebox_late_spans_total = %v (present %v), want at most a tenth of %d spans", late, ok, sum.Spans)
	}
	targets := m[`fusebox_breaker_targets{state="open"}`] + m[`fusebox_breaker_targets{state="half_open"}`] + m[`fusebox_breaker_targets{state="closed"}`]
	if targets < 1 {
		t.Errorf("fusebox_breaker_targets sums to %v, want at least the tripped target", targets)
	}
	end := float64(start.Add(15 * time.Minute).Unix())
	for p := 0; p < 3; p++ {
		wm := m[fmt.Sprintf(`fusebox_watermark_timestamp_seconds{partition="%d",topic="fusebox.keyed"}`, p)]
		if wm < float64(start.Unix()) || wm > end {
			t.Errorf("watermark of keyed partition %d = %v, want within the traffic's event time [%v, %v]", p, wm, start.Unix(), end)
		}
	}
	if lat := m[`fusebox_processing_latency_seconds_sum`] / m[`fusebox_processing_latency_seconds_count`]; !(lat > 0 && lat < 30) {
		t.Errorf("mean processing latency %v s, want in (0, 30)", lat)
	}
	if code, _ := get(t, "http://"+addr+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/ with http.pprof: %d", code)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after cancel; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("fusebox run did not stop")
	}
	if !strings.Contains(stderr.String(), "fusebox stopped: input drained") {
		t.Errorf("no clean-stop log line; stderr:\n%s", stderr.String())
	}
	_, cmds := readJSONL(t, jsonl)
	if len(cmds) == 0 {
		t.Fatal("no fuse command in the JSONL sink")
	}
	for _, c := range cmds {
		if c.KeyID != "k1" || c.Signature == "" {
			t.Errorf("command %s v%d: key %q, signature %q; want signed with k1", c.Target, c.Version, c.KeyID, c.Signature)
		}
	}

}

// TestRunRefusesBadStarts covers what stops `fusebox run` before it
// connects: a missing --config, config errors (each with file:line), no
// signing key.
func TestRunRefusesBadStarts(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FUSEBOX_FUSE_KEYS", "")
	t.Setenv(envConfig, "")
	bad := writeFile(t, dir, "bad.yaml", "kafka:\n  brokers: [nohost]\nslos:\n  - name: x\n    tail: {budget: 10, p: 1.5}\n")
	good := writeFile(t, dir, "good.yaml", runConfig([]string{"127.0.0.1:1"}, ""))
	for _, tc := range []struct {
		args   []string
		code   int
		stderr []string
	}{
		{nil, exitUsage, []string{"--config FILE is required (or $FUSEBOX_CONFIG); see fusebox run -h"}},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, exitFailure, []string{"missing.yaml", "no such file"}},
		{[]string{"--config", bad}, exitFailure, []string{"2 problem(s)", bad + ":2: kafka.brokers[0]: want host:port", bad + ":5: slos[0].tail.p: must be in (0, 1)"}},
		{[]string{"--config", good}, exitFailure, []string{"refuses to start", "no fuse signing key", "FUSEBOX_FUSE_KEYS", "--insecure-unsigned"}},
		{[]string{"--config", good, "--fuse-keys", writeFile(t, dir, "short.keys", "k1:abcd\n")}, exitFailure, []string{"--fuse-keys", "secret shorter than 32 bytes"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCmd(t, append([]string{"run"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}

// TestKafkaRunSASL runs `fusebox run` against a kfake broker with SASL users:
// with the right password (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN) it joins
// both groups (/readyz 200) and stops cleanly; with a wrong password it
// exits 1 with an error that names SASL and the config fields.
func TestKafkaRunSASL(t *testing.T) {
	k := testharness.StartBroker(t, testharness.WithSASL(
		testharness.SASLUser{Mechanism: "SCRAM-SHA-256", User: "s256", Password: "pw-256"},
		testharness.SASLUser{Mechanism: "SCRAM-SHA-512", User: "s512", Password: "pw-512"},
		testharness.SASLUser{Mechanism: "PLAIN", User: "plain", Password: "pw-plain"}))
	dir := t.TempDir()
	for _, tc := range []struct{ mech, user, pass string }{
		{"SCRAM-SHA-256", "s256", "pw-256"},
		{"SCRAM-SHA-512", "s512", "pw-512"},
		{"PLAIN", "plain", "pw-plain"},
	} {
		t.Run(tc.mech, func(t *testing.T) {
			t.Setenv("FUSEBOX_TEST_KAFKA_PASSWORD", tc.pass)
			cfg := writeFile(t, dir, tc.mech+".yaml", withKafka(runConfig(k.Brokers, "http: {listen: 127.0.0.1:0}\nsigning: {insecure_unsigned: true}\n"),
				"  group: g-"+strings.ToLower(tc.mech)+"\n  sasl: {mechanism: "+tc.mech+", username: "+tc.user+", password_env: FUSEBOX_TEST_KAFKA_PASSWORD}\n"))
			stderr := runUntilReady(t, "--config", cfg)
			if strings.Contains(stderr.String(), tc.pass) {
				t.Errorf("the log shows the password")
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		cfg := writeFile(t, dir, "wrong.yaml", withKafka(runConfig(k.Brokers, "http: {listen: 127.0.0.1:0}\nsigning: {insecure_unsigned: true}\n"),
			"  sasl: {mechanism: SCRAM-SHA-512, username: s512, password: not-the-password}\n"))
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		stderr := newLogLines()
		code := run(ctx, []string{"run", "--config", cfg}, new(strings.Builder), stderr)
		if code != exitFailure {
			t.Fatalf("exit %d with a wrong password, want %d; stderr:\n%s", code, exitFailure, stderr.String())
		}
		for _, s := range []string{"SASL authentication failed", "kafka.sasl.username", "password", "mechanism"} {
			if !strings.Contains(stderr.String(), s) {
				t.Errorf("the error lacks %q:\n%s", s, stderr.String())
			}
		}
		if strings.Contains(stderr.String(), "not-the-password") {
			t.Errorf("the log shows the password")
		}
	})
}

// withKafka adds lines to the kafka section of an SLO file.
func withKafka(cfg, lines string) string {
	return strings.Replace(cfg, "kafka:\n", "kafka:\n"+lines, 1)
}

// verdictPartition is the keyed partition that owns a verdict: fusebox
// partitions the keyed topic by tenant.
func verdictPartition(v *schemas.Verdict, partitions int32) int32 {
	return int32(schemas.TenantHash(v.Key.Tenant) % uint32(partitions))
}
