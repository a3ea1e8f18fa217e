package main

import (
	"path/filepath"
	"strings"
	"testing"
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
		"slo confidence-drift: drift ks_confidence: KS p < 1e-05",
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
	for _, want := range []string{
		bad + ":5: slos[0].tail.windw: unknown field (did you mean window?)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// Once the typo is fixed, the other problems are all reported, each
	// with its line.
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
		code, _, stderr := runCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", tc.args, code, tc.code, stderr, tc.stderr)
		}
	}
}
