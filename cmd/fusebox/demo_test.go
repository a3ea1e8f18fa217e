package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkDemoStdout fails the test unless the headless demo's stdout holds
// only verdict and fuse lines, with as many verdict lines (at least one)
// as the JSONL file at jsonl holds verdicts.
func checkDemoStdout(t *testing.T, stdout, jsonl string) {
	t.Helper()
	verdicts := 0
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		switch {
		case strings.HasPrefix(l, "verdict "):
			verdicts++
		case strings.HasPrefix(l, "fuse "):
		default:
			t.Errorf("unexpected stdout line %q", l)
		}
	}
	if vs, _ := readJSONL(t, jsonl); verdicts == 0 || verdicts != len(vs) {
		t.Errorf("%d verdict lines, %d verdicts in %s", verdicts, len(vs), jsonl)
	}
}

// TestDemoCommandHeadless runs `fusebox demo --headless` for a few seconds
// of wall time: it exits 0, prints only verdict and fuse lines on stdout,
// names its JSONL file on stderr and writes to it. The full scenario is
// tested in cmd/fusebox/internal/demo.
func TestDemoCommandHeadless(t *testing.T) {
	jsonl := filepath.Join(t.TempDir(), "demo.jsonl")
	code, stdout, stderr := runCmd(t, "demo", "--headless", "--duration", "6s", "--speedup", "150", "--jsonl", jsonl, "--http", "127.0.0.1:0")
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	checkDemoStdout(t, stdout, jsonl)
	for _, want := range []string{"embedded Kafka broker on 127.0.0.1:", "verdicts and fuse commands go to " + jsonl, "signed with the throwaway key demo-", "live page on http://127.0.0.1:"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestDemoCommandUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"demo", "--speedup", "0"}, "--speedup 0: must be positive"},
		{[]string{"demo", "--duration", "-1s"}, "--duration -1s: must not be negative"},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, exitUsage, tc.stderr)
		}
	}
}

// TestDemoCtrlC runs `fusebox demo --headless` as a process and sends it
// SIGINT (Ctrl-C) once verdicts flow: it stops cleanly, exit 0, with its
// summary, and leaves a readable JSONL file.
func TestDemoCtrlC(t *testing.T) {
	jsonl := filepath.Join(t.TempDir(), "demo.jsonl")
	var stderr bytes.Buffer
	cmd, stdout := startPiped(t, &stderr, "demo", "--headless", "--speedup", "100", "--jsonl", jsonl, "--http", "127.0.0.1:0", "--ui=false")
	sc := bufio.NewScanner(stdout)
	lines := 0
	for sc.Scan() {
		if lines++; lines == 50 {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after Ctrl-C: %v; stderr:\n%s", err, stderr.String())
	}
	if lines < 50 {
		t.Fatalf("only %d lines before the end; stderr:\n%s", lines, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped before the end of the scenario") {
		t.Errorf("no summary after Ctrl-C; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "fusebox demo: metrics on http://127.0.0.1:") || strings.Contains(stderr.String(), "live page") {
		t.Errorf("--ui=false: the start line should name the metrics and no live page; stderr:\n%s", stderr.String())
	}
	vs, _ := readJSONL(t, jsonl)
	if len(vs) == 0 {
		t.Error("no verdict in the JSONL file after Ctrl-C")
	}
}

// TestDemoCommandNotATerminal runs `fusebox demo` (no --headless) as a
// process whose stdout is a file: it writes plain verdict and fuse lines,
// not the live view — no escape byte on stdout or stderr, no redraw — and
// runs until --duration, as the live view would.
func TestDemoCommandNotATerminal(t *testing.T) {
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "demo.jsonl")
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var errb bytes.Buffer
	cmd := exec.Command(os.Args[0], "demo", "--duration", "6s", "--speedup", "150", "--jsonl", jsonl)
	cmd.Env = append(os.Environ(), envAsMain+"=1")
	cmd.Stdout, cmd.Stderr = out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\nstderr: %s", err, errb.String())
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(b, 0x1b); i >= 0 {
		t.Errorf("stdout holds an escape byte at %d: %q", i, b[max(0, i-20):min(len(b), i+20)])
	}
	if i := bytes.IndexByte(errb.Bytes(), 0x1b); i >= 0 {
		t.Errorf("stderr holds an escape byte at %d", i)
	}
	if bytes.ContainsRune(b, '\r') {
		t.Error("stdout holds a carriage return (a redraw)")
	}
	checkDemoStdout(t, string(b), jsonl)
}
