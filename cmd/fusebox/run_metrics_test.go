package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// checkMetrics runs `promtool check metrics` (format and naming lint) on
// one /metrics scrape.
func checkMetrics(t *testing.T, bin, what, text string) {
	t.Helper()
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics on the %s scrape: %v\n%s", what, err, out.String())
	}
}

const metricsSLOs = `
slos:
  - name: availability
    burnrate: {min_events: 50}
  - name: latency
    tail: {budget: 2500, window: 5m}
`

// TestKafkaRunMetricsPassPromtool runs `fusebox run` as a process and checks
// its /metrics with promtool before any traffic and while traffic with a
// latency incident flows: the fuse command counters are there from the
// start at 0 for every action; build_info carries a revision; the sinks
// label where they write "destination"; the watermark is a
// _timestamp_seconds gauge; once the incident trips a breaker, the
// open-targets gauge names the SLO and one INFO line tells the change.
func TestKafkaRunMetricsPassPromtool(t *testing.T) {
	bin := testharness.Promtool(t, "the /metrics format")
	k := testharness.StartBroker(t)
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "run.jsonl")
	cfgText := strings.Replace(sigtermConfig(k.Brokers, "metrics", "sinks: {jsonl: {path: "+jsonl+"}}\nhttp: {listen: 127.0.0.1:0}\n"),
		sigtermSLOs, metricsSLOs, 1)
	cfgPath := writeFile(t, dir, "metrics.yaml", cfgText)
	run := startRunProcess(t, cfgPath)
	stderr, addr := run.stderr, run.addr

	code, text := get(t, "http://"+addr+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	checkMetrics(t, bin, "first", text)
	for _, a := range []string{"trip", "half_open", "close", "degrade", "throttle", "rollback", "scale_out"} {
		if !strings.Contains(text, "\nfusebox_fuse_commands_total{action=\""+a+"\"} 0\n") {
			t.Errorf("fusebox_fuse_commands_total{action=%q} is not 0 before any command:\n%s", a, grepLines(text, "fusebox_fuse_commands_total"))
		}
	}
	if !strings.Contains(text, "\nfusebox_build_info{go_version=") || !strings.Contains(text, ",revision=\"") {
		t.Errorf("fusebox_build_info without a revision label:\n%s", grepLines(text, "fusebox_build_info"))
	}

	sc := traffic.Demo()
	sc.Rate = 150
	sc.Duration = 40 * time.Minute
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	published := make(chan struct{})
	go func() {
		defer close(published)
		publishScenarioPaced(t, k.Brokers, sc, start, 180)
	}()
	// The publisher reports to t: it must end before the test does (and
	// before the broker, whose cleanup was registered earlier, stops).
	t.Cleanup(func() { <-published })
	testharness.Eventually(t, 90*time.Second, "a trip", func() bool {
		return scrape(t, addr)[`fusebox_fuse_commands_total{action="trip"}`] > 0
	})
	_, text = get(t, "http://"+addr+"/metrics")
	checkMetrics(t, bin, "running", text)
	for _, want := range []string{
		`fusebox_sink_records_total{destination="` + jsonl + `",sink="jsonl"}`,
		`fusebox_watermark_timestamp_seconds{partition="`,
	} {
		if !strings.Contains(text, "\n"+want) {
			t.Errorf("no %s in the scrape:\n%s", want, grepLines(text, want[:strings.IndexByte(want, '{')]))
		}
	}
	// The open targets carry their incident id (the trip's first
	// correlation id: 32 hex digits).
	if !openTargetsLine.MatchString(text) {
		t.Errorf("no open trip target of latency with its incident in the scrape:\n%s", grepLines(text, "fusebox_breaker_open_targets"))
	}
	if strings.Contains(text, "fusebox_watermark_seconds") || strings.Contains(text, `topic="`+jsonl) {
		t.Error("old names on /metrics: fusebox_watermark_seconds or a sink's topic label")
	}
	if !strings.Contains(stderr.String(), `"msg":"breaker state change","component":"breaker"`) ||
		!strings.Contains(stderr.String(), `"action":"trip","state":"open","from":"closed","slo":"latency"`) {
		t.Errorf("no INFO line for the trip; stderr:\n%s", stderr.String())
	}

	run.sigterm(t)
	run.waitClean(t)
}

// openTargetsLine is a scrape's line of an open trip target of the latency SLO.
var openTargetsLine = regexp.MustCompile(`\nfusebox_breaker_open_targets\{action="trip",incident="[0-9a-f]{32}",slo="latency",state="open"\} [1-9]`)

// grepLines returns the lines of text containing s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
