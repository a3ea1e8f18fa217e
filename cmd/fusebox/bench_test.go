package main

import (
	"strings"
	"testing"
)

func TestBenchUsage(t *testing.T) {
	code, stdout, _ := runCmd(t, "bench", "--help")
	if code != exitOK || !strings.Contains(stdout, "false-trips") || !strings.Contains(stdout, "tail-accuracy") || !strings.Contains(stdout, "sequential") {
		t.Errorf("bench --help: exit %d\n%s", code, stdout)
	}
	for _, args := range [][]string{
		{"bench", "false-trips", "--duration", "30m"},
		{"bench", "false-trips", "--rate", "0"},
		{"bench", "false-trips", "--config", "/nonexistent.yaml"},
		{"bench", "tail-accuracy", "--families", "weibull"},
		{"bench", "tail-accuracy", "--exceedance-scale", "0"},
		{"bench", "false-trips", "--parallel", "-1"},
		{"bench", "drift-peers", "--seeds", "0"},
		{"bench", "drift-peers", "--rates", "200,0"},
		{"bench", "drift-peers", "--kinds", "shift-0.30"},
		{"bench", "drift-peers", "--config", "/nonexistent.yaml"},
		{"bench", "sequential", "--history", "10m"},
		{"bench", "sequential", "--runs", "0"},
		{"bench", "nope"},
	} {
		if code, _, stderr := runCmd(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, stderr)
		}
	}
}
