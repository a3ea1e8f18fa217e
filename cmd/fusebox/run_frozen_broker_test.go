package main

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// frozenScrapeTimeout is how long a scrape of a process whose broker hangs
// may take: Prometheus's default scrape timeout, and the soak's.
const frozenScrapeTimeout = 10 * time.Second

// TestKafkaRunMetricsAnswerWhileTheBrokerHangs runs `fusebox run` in-process
// on half an hour of traffic and, while it works through that backlog,
// freezes the broker (requests wait, as on a broker in a long GC pause:
// testharness Kafka.Freeze) for at least 30 s and until a request of
// fusebox's has timed out — an offset commit (10 s), a checkpoint or the
// router's metadata refresh — scraping /metrics every 2 s throughout:
// every scrape answers within 10 s, with the commit counters in it, since
// /metrics reads counters and never asks the broker. After the thaw the
// process is ready again and exits 0. The soak saw /metrics stop
// answering while commits to its embedded broker timed out; this shows a
// hung broker alone does not do that.
func TestKafkaRunMetricsAnswerWhileTheBrokerHangs(t *testing.T) {
	k := testharness.StartBroker(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "fusebox.yaml", runConfig(k.Brokers, "http: {listen: 127.0.0.1:0}\n"))
	sc := errorBurst()
	sc.Duration = 30 * time.Minute
	publishScenario(t, k.Brokers, sc, time.Now().Add(-time.Hour).Truncate(time.Minute))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr, addr, done := startRun(t, ctx, "--config", cfg, "--fuse-keys", testKeyFile(t, dir))
	hc := &http.Client{Timeout: frozenScrapeTimeout}
	// timedScrape fails the test unless /metrics answers 200 within
	// frozenScrapeTimeout and, once the pipeline runs (running), has the
	// commit counters; it returns the offset commits and their errors.
	running := false
	timedScrape := func(what string) (commits, errs float64) {
		t.Helper()
		t0 := time.Now()
		resp, err := hc.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatalf("%s: /metrics did not answer within %v: %v; stderr:\n%s", what, frozenScrapeTimeout, err, stderr.String())
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: /metrics: %s", what, resp.Status)
		}
		seen := false
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			name, v, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			switch {
			case strings.HasPrefix(name, "fusebox_offset_commits_total{"):
				commits += n
				seen = true
			case strings.HasPrefix(name, "fusebox_offset_commit_errors_total{"):
				errs += n
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: reading /metrics after %v: %v", what, time.Since(t0), err)
		}
		if running && !seen {
			t.Fatalf("%s: /metrics has no fusebox_offset_commits_total", what)
		}
		return commits, errs
	}
	testharness.Eventually(t, 60*time.Second, "offset commits before the freeze", func() bool {
		c, _ := timedScrape("before the freeze")
		return c > 0
	})
	running = true
	_, errsBefore := timedScrape("before the freeze")

	thaw := k.Freeze(t)
	frozen := time.Now()
	failing := false
	scrapes := 0
	var why string
	// Scrape for at least 30 s of the freeze, and until a request of
	// fusebox's to the broker has timed out (at most 120 s; the router
	// refreshes its metadata every 30 s, and its request waits out
	// franz-go's timeouts): the state the soak's scrapes timed out in.
	for time.Since(frozen) < 30*time.Second || !failing {
		if time.Since(frozen) > 120*time.Second {
			t.Fatalf("no request of fusebox's timed out in %v of a frozen broker (commit errors %v): the broker did not hang; stderr:\n%s",
				time.Since(frozen).Round(time.Second), errsBefore, stderr.String())
		}
		_, errs := timedScrape("broker frozen " + time.Since(frozen).Round(time.Second).String())
		scrapes++
		log := stderr.String()
		switch {
		case failing:
		case errs > errsBefore:
			failing, why = true, "offset commits failed"
		case strings.Contains(log, "i/o timeout") || strings.Contains(log, "context deadline exceeded"):
			failing, why = true, "a request timed out (logged)"
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("%d scrapes answered during %v of a frozen broker (%s)", scrapes, time.Since(frozen).Round(time.Second), why)
	thaw()
	testharness.Eventually(t, 120*time.Second, "/readyz 200 after the thaw", func() bool {
		code, _ := get(t, "http://"+addr+"/readyz")
		return code == http.StatusOK
	})
	timedScrape("after the thaw")
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after the thaw; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("fusebox run did not exit within 2 min of the cancel; stderr:\n%s", stderr.String())
	}
}
