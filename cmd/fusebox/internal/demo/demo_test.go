package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

func TestMain(m *testing.M) { testharness.Main(m) }

// testSpeedup is the speedup of the headless test: higher than the
// default to keep the test short (FUSEBOX_DEMO_SPEEDUP overrides it).
func testSpeedup(t *testing.T) float64 {
	if s := os.Getenv("FUSEBOX_DEMO_SPEEDUP"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return 60
}

// TestDemoHeadless runs the whole demo — embedded broker, generator,
// pipeline, fuse client — on the built-in scenario, headless, to the end
// of the scenario, and checks the command stream in the JSONL file and
// the lines printed: every incident trips its target (state open) with the
// policy's action and closes later; no target outside the incidents trips;
// every command was verified by the fuse client.
func TestDemoHeadless(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Headless: true, Speedup: testSpeedup(t), JSONL: filepath.Join(dir, "demo.jsonl"), HTTP: "off",
		Start: start, Stdout: &stdout, Stderr: &stderr})
	t.Logf("stderr:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Finished {
		t.Fatalf("the demo stopped before the end of the scenario: %+v", res)
	}
	vs, cmds := readJSONL(t, res.JSONL)
	t.Logf("wall %v: %d verdicts, %d commands in the JSONL file; %d applied by the fuse client; all incidents done after %v",
		res.Wall, len(vs), len(cmds), res.Applied, res.Outcome.AllDone)
	checkIncidents(t, cmds, start)
	if res.Outcome.AllDone <= 0 {
		t.Errorf("the live view never saw every incident trip and recover (outcome %+v)", res.Outcome)
	}
	if int64(len(cmds)) != res.Commands || res.Applied != res.Commands {
		t.Errorf("%d commands in the JSONL file, %d emitted, %d applied by the fuse client", len(cmds), res.Commands, res.Applied)
	}
	for _, c := range cmds {
		if c.KeyID == "" || c.Signature == "" {
			t.Fatalf("unsigned command %+v", c)
		}
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var nv, nc, ne int
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "verdict "):
			nv++
		case strings.HasPrefix(l, "fuse "):
			nc++
		case strings.HasPrefix(l, "effect "):
			ne++
			if !strings.Contains(l, " → ") || !strings.Contains(l, "evaluation") || !strings.Contains(l, " v") {
				t.Errorf("effect line without the command, before → after and evaluations: %q", l)
			}
		default:
			t.Errorf("unexpected headless line %q", l)
		}
	}
	effects := 0
	for _, v := range vs {
		if v.Processor == "effect" {
			effects++
		}
	}
	if nv+ne != len(vs) || ne != effects || nc != len(cmds) {
		t.Errorf("printed %d verdict, %d effect and %d fuse lines, the JSONL file has %d verdicts (%d effect) and %d commands", nv, ne, nc, len(vs), effects, len(cmds))
	}
	// Every incident's trip is judged (the demo's gateway does not act on
	// the commands, so the users' SLO may not recover before the close).
	if ne < len(Incidents()) {
		t.Errorf("%d effect lines for %d incidents, want one per trip at least", ne, len(Incidents()))
	}
}

// TestDemoLiveWithClickHouse runs the live view for a few seconds of wall
// time with --clickhouse against the harness's server: the schema is
// migrated, verdict rows arrive (as many as the JSONL file holds), and the
// view is drawn with ANSI escapes only, with a row per model.
func TestDemoLiveWithClickHouse(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	res, err := Run(context.Background(), Options{
		Duration: 12 * time.Second, Speedup: 120, JSONL: filepath.Join(dir, "demo.jsonl"), RedrawEvery: 500 * time.Millisecond, HTTP: "127.0.0.1:0",
		ClickHouse: ch.Addr, ClickHouseDatabase: db, ClickHouseUser: ch.Username, ClickHousePassword: ch.Password,
		Stdout: &stdout, Stderr: &stderr,
	})
	t.Logf("stderr:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Verdicts == 0 {
		t.Fatal("no verdicts in 12 s of demo")
	}
	vs, _ := readJSONL(t, res.JSONL)
	conn := ch.Conn(t)
	var n uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM "+db+".verdicts FINAL").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n != uint64(len(vs)) {
		t.Errorf("%d verdict rows in ClickHouse, %d verdicts in the JSONL file", n, len(vs))
	}
	var rollups uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM "+db+".span_rollups").Scan(&rollups); err != nil {
		t.Fatal(err)
	}
	if rollups == 0 {
		t.Error("no span rollups in ClickHouse")
	}
	out := stdout.String()
	for _, want := range []string{ansiAltOn, ansiHome, "fusebox demo", "P99.9 latency", "acme/chat/gpt-4o-mini", "globex/search/llama-3-70b",
		"fuse commands", "latency tail", "live page: http://127.0.0.1:", ansiAltOff} {
		if !strings.Contains(out, want) {
			t.Errorf("the live view lacks %q", want)
		}
	}
	if !strings.Contains(out, "effect of each command") {
		t.Error("the live view lacks the effects section")
	}
	if !strings.Contains(stderr.String(), "ClickHouse "+ch.Addr) {
		t.Errorf("the start line does not name ClickHouse")
	}
}
