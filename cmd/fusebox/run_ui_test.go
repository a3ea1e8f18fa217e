package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/internal/ui"
)

// TestKafkaRunServesLivePage runs `fusebox run` as a process with http.ui on
// and checks that the listener serving /metrics also serves the page and
// its API, fed by the run's verdicts: every key of the JSONL file's tail
// verdicts is listed, and a key's series hold its evaluations.
func TestKafkaRunServesLivePage(t *testing.T) {
	k := testharness.StartBroker(t)
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "run.jsonl")
	cfgPath := writeFile(t, dir, "ui.yaml", sigtermConfig(k.Brokers, "ui", "sinks: {jsonl: {path: "+jsonl+"}}\nhttp: {listen: 127.0.0.1:0, ui: true}\n"))
	run := startRunProcess(t, cfgPath)
	stderr, addr := run.stderr, run.addr
	if u := stderr.field(t, "serving the live page", "url", 10*time.Second); u != "http://"+addr+"/ui/" {
		t.Errorf("the live page's log line names %q, want http://%s/ui/", u, addr)
	}

	if code, body := get(t, "http://"+addr+"/ui/"); code != 200 || !strings.Contains(body, "<title>fusebox · live</title>") {
		t.Fatalf("/ui/: %d %.200s", code, body)
	}
	var keys ui.KeysResponse
	readKeys := func() {
		code, body := get(t, "http://"+addr+"/api/ui/keys")
		if code != 200 {
			t.Fatalf("/api/ui/keys: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &keys); err != nil {
			t.Fatal(err)
		}
	}
	readKeys()
	if keys.Verdicts != 0 || len(keys.Keys) != 0 {
		t.Fatalf("before any traffic: %+v", keys)
	}

	sc := traffic.Demo()
	sc.Rate = 100
	sc.Duration = 12 * time.Minute
	publishScenario(t, k.Brokers, sc, time.Now().Add(-time.Hour).Truncate(time.Minute))
	testharness.Eventually(t, 90*time.Second, "tail verdicts on the page", func() bool {
		readKeys()
		for _, k := range keys.Keys {
			for _, p := range k.Processors {
				if p == "tail" {
					return true
				}
			}
		}
		return false
	})
	run.sigterm(t)
	run.waitClean(t)
	// Every key the page listed has verdicts in the JSONL file, and the
	// page counted no more verdicts than the run wrote.
	vs, _ := readJSONL(t, jsonl)
	seen := map[ui.KeyJSON]bool{}
	for _, v := range vs {
		seen[ui.KeyJSON{Tenant: v.Key.Tenant, Service: v.Key.Service, Model: v.Key.Model, Variant: v.Key.Variant}] = true
	}
	for _, k := range keys.Keys {
		if !seen[k.Key] {
			t.Errorf("the page lists %+v, which has no verdict in the JSONL file", k.Key)
		}
	}
	if keys.Verdicts > int64(len(vs)) || keys.Verdicts == 0 {
		t.Errorf("the page counted %d verdicts, the JSONL file has %d", keys.Verdicts, len(vs))
	}
}
