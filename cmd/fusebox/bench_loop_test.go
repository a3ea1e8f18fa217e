package main

import (
	"strings"
	"testing"
)

// The run itself is cmd/fusebox/internal/loop's TestLoopCloses (60 s); here the flags.
func TestBenchLoopUsage(t *testing.T) {
	if code, stdout, stderr := runCmd(t, "bench", "--help"); code != exitOK || !strings.Contains(stdout, "loop ") {
		t.Errorf("bench --help does not list loop: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCmd(t, "demo", "--help"); code != exitOK || !strings.Contains(stdout+stderr, "-loop") {
		t.Errorf("demo --help does not list --loop: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, args := range [][]string{
		{"bench", "loop", "--duration", "30s"},
		{"bench", "loop", "--rate", "0"},
		{"bench", "loop", "--nope"},
	} {
		if code, _, stderr := runCmd(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, stderr)
		}
	}
}
