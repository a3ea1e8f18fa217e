package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/product"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/observe"
)

func TestConfigCheckExample(t *testing.T) {
	code, stdout, stderr := runCmd(t, "config", "check", "../../examples/fusebox.yaml")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{
		"ok: ../../examples/fusebox.yaml: config version ",
		", 6 SLO(s), sinks kafka",
		"slo latency-p999: tail p999_duration_ms budget 6000 (breach when",
		"slo confidence-drift: drift ks_confidence: KS p < 2.31e-07 and D >= 0, 1 in a row",
		"; cusum of normal scores tuned to 0.3 sd, every 15s; slice: share of calls below the reference's 0.01 quantile (x3), every 15s; 0.001 false alarms per key-day",
		"slo alignment-decay: decay of alignment",
		"slo request-mix: scaling per [tenant service]",
		"slo corrections: corrections: rate <= 0.05",
		"slo availability: burnrate: target 0.999; page 14.4× over 1h0m0s and 5m0s",
		"breaker: trip on 3 of the last 10 evaluations",
		"tail→trip, burnrate→trip, scaling→scale_out",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestConfigCheckErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", `kafka:
  brokers: [127.0.0.1:9092]
slos:
  - name: latency
    tail: {budget: 100, windw: 5m}
  - name: latency
    drift: {alpha: 2}
breaker:
  k: 0
`)
	code, stdout, stderr := runCmd(t, "config", "check", bad)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFailure, stdout, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout on errors: %q", stdout)
	}
	// Every problem at once, each with its line: the unknown key does not
	// hide the semantic errors (it did: they showed only once the typo
	// was fixed).
	for _, want := range []string{
		"4 problem(s)",
		bad + ":5: slos[0].tail.windw: unknown field (did you mean window?)",
		bad + ":6: slos[1].name: same name as slos[0]",
		bad + ":7: slos[1].drift.alpha:",
		bad + ":9: breaker.k: must be at least 1",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// Once the typo is fixed, the other three remain.
	fixed := writeFile(t, dir, "bad2.yaml", strings.Replace(readFile(t, bad), "windw", "window", 1))
	code, _, stderr = runCmd(t, "config", "check", fixed)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d\nstderr: %s", code, exitFailure, stderr)
	}
	for _, want := range []string{
		"3 problem(s)",
		fixed + ":6: slos[1].name: same name as slos[0]",
		fixed + ":7: slos[1].drift.alpha:",
		fixed + ":9: breaker.k: must be at least 1",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestConfigUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"config"}, exitUsage, "name a subcommand"},
		{[]string{"config", "lint"}, exitUsage, `unknown subcommand "lint"`},
		{[]string{"config", "check"}, exitUsage, "give exactly one FILE"},
		{[]string{"config", "check", "a", "b"}, exitUsage, "give exactly one FILE"},
		{[]string{"config", "check", filepath.Join(t.TempDir(), "none.yaml")}, exitFailure, "no such file"},
		{[]string{"config", "-h"}, exitOK, "check FILE"},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code == exitOK {
			stderr = stdout // help goes to stdout
		}
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", tc.args, code, tc.code, stderr, tc.stderr)
		}
	}
}

// TestConfigDiff: `fusebox config diff OLD NEW` names, per SLO, what a
// restart keeps, resets, adds and removes, and the breaker's fate.
func TestConfigDiff(t *testing.T) {
	dir := t.TempDir()
	old := writeFile(t, dir, "old.yaml", `slos:
  - name: latency
    tail: {budget: 2500, window: 10m}
  - name: avail
    burnrate: {target: 0.999}
  - name: drift
    drift: {metric: confidence}
  - name: trend
    decay: {limit: -0.12}
`)
	cur := writeFile(t, dir, "new.yaml", `slos:
  - name: latency
    tail: {budget: 2000, window: 10m}
  - name: avail
    burnrate: {target: 0.99}
  - name: drift
    drift: {metric: confidence, window: 20m}
  - name: ttft
    tail: {metric: ttft_ms, budget: 900}
breaker:
  target: [tenant, service]
`)
	code, stdout, stderr := runCmd(t, "config", "diff", old, cur)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{
		": every verdict id changes",
		"  slo latency: kept\n", "  slo avail: kept\n", "  slo drift: reset\n", "  slo ttft: added\n", "  slo trend: removed\n",
		"  breaker: reset\n",
		"kept: latency,avail,_rollup\n", "reset: drift\n", "added: ttft\n", "removed: trend\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runCmd(t, "config", "diff", old, old)
	if code != exitOK || !strings.Contains(stdout, "verdict ids unchanged") || !strings.Contains(stdout, "reset: -\n") || !strings.Contains(stdout, "  breaker: kept\n") {
		t.Errorf("diff of a file with itself: exit %d\n%s", code, stdout)
	}
	if code, _, _ := runCmd(t, "config", "diff", old); code != exitUsage {
		t.Errorf("diff with one file: exit %d, want %d", code, exitUsage)
	}
}

// TestSigningKeyChecks: run refuses an active key past its not-after (before
// connecting anywhere); config check says the same, warns about a key
// expiring within signing.expiry_warning, and names a malformed entry.
func TestSigningKeyChecks(t *testing.T) {
	dir := t.TempDir()
	secret := strings.Repeat("ab", 32)
	cfg := writeFile(t, dir, "f.yaml", "kafka: {brokers: [127.0.0.1:1]}\nhttp: {listen: \"\"}\nslos: [{name: a, burnrate: {target: 0.999}}]\n")
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	soon := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	later := time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339)
	expired := writeFile(t, dir, "expired.keys", "k0:"+secret+"\nk1:"+secret+" not-after="+past+"\n")
	expiring := writeFile(t, dir, "expiring.keys", "k1:"+secret+" not-after="+soon+"\n")
	fine := writeFile(t, dir, "fine.keys", "k1:"+secret+" not-after="+later+"\n")
	notHex := writeFile(t, dir, "nothex.keys", "k0:"+secret+"\nk1:zz"+secret[2:]+"\n")

	code, _, stderr := runCmd(t, "run", "--config", cfg, "--fuse-keys", expired)
	if code != exitFailure || !strings.Contains(stderr, "refuses to start") || !strings.Contains(stderr, `key \"k1\"`) || !strings.Contains(stderr, "past its not-after") {
		t.Errorf("run with an expired active key: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runCmd(t, "config", "check", cfg, "--fuse-keys", expired)
	if code != exitFailure || !strings.Contains(stderr, `key "k1"`) || !strings.Contains(stderr, "past its not-after") {
		t.Errorf("config check with an expired active key: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := runCmd(t, "config", "check", "--fuse-keys", expiring, cfg)
	if code != exitOK || !strings.Contains(stdout, "warning: the active fuse signing key \"k1\"") || !strings.Contains(stdout, "expires at "+soon) {
		t.Errorf("config check with a key expiring in 2 days: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	code, stdout, _ = runCmd(t, "config", "check", cfg, "--fuse-keys", fine)
	if code != exitOK || strings.Contains(stdout, "warning") || !strings.Contains(stdout, "signing: key k1 from --fuse-keys") {
		t.Errorf("config check with a key valid for 30 days: exit %d\n%s", code, stdout)
	}
	code, _, stderr = runCmd(t, "config", "check", cfg, "--fuse-keys", notHex)
	if code != exitFailure || !strings.Contains(stderr, "entry 2") || !strings.Contains(stderr, `key id "k1"`) || !strings.Contains(stderr, "not hex") || strings.Contains(stderr, secret[2:]) {
		t.Errorf("config check with a non-hex secret: exit %d\n%s", code, stderr)
	}
}

func TestSigningKeyMetric(t *testing.T) {
	na := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	ring, err := fuse.ParseKeyring("k1:" + strings.Repeat("cd", 32) + " not-after=" + na.Format(time.RFC3339))
	if err != nil {
		t.Fatal(err)
	}
	var s observe.Snapshot
	product.SigningKeyMetrics(ring).Collect(&s)
	if len(s.Extra) != 1 || s.Extra[0].Name != "fusebox_signing_key_not_after_seconds" || s.Extra[0].Value != float64(na.Unix()) ||
		len(s.Extra[0].Labels) != 1 || s.Extra[0].Labels[0].Value != "k1" {
		t.Fatalf("samples %+v, want fusebox_signing_key_not_after_seconds{key=k1} %d", s.Extra, na.Unix())
	}
}
