package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// dockerStampFlags returns the -X flags of the Dockerfile's go build,
// its ${VERSION} and ${REVISION} replaced by version and revision.
func dockerStampFlags(t *testing.T, version, revision string) string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	var flags []string
	for arg, val := range map[string]string{"VERSION": version, "REVISION": revision} {
		m := regexp.MustCompile(`-X (\S+)=\$\{` + arg + `\}`).FindStringSubmatch(df)
		if m == nil || !strings.Contains(df, "ARG "+arg) {
			t.Fatalf("the Dockerfile does not stamp its build argument %s with -ldflags -X", arg)
		}
		flags = append(flags, "-X "+m[1]+"="+val)
	}
	if !strings.Contains(df, "-buildvcs=false") {
		t.Error("the Dockerfile's go build stamps from git: want -buildvcs=false and the -X flags")
	}
	return strings.Join(flags, " ")
}

// TestVersionStampedByLdflags builds the binary as the Dockerfile does,
// with VCS stamping off (-buildvcs=false) and the version and revision
// passed by the Dockerfile's own -ldflags -X flags: `fusebox version` prints both, and
// fusebox_build_info on /metrics (of a demo run by that binary) carries
// them as its labels. Without the flags, the same build knows no
// revision.
func TestVersionStampedByLdflags(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go not on PATH: the test builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fusebox")
	// No -trimpath (the Dockerfile's): it changes every package's build
	// key, and the test would recompile the module and its dependencies.
	flags := dockerStampFlags(t, "v9.8.7-test", "0123456789abcdef0123456789abcdef01234567")
	build := exec.Command(goBin, "build", "-buildvcs=false", "-ldflags", "-s -w "+flags, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("fusebox version: %v\n%s", err, out)
	}
	for _, want := range []string{"fusebox v9.8.7-test\n", "commit  0123456789abcdef0123456789abcdef01234567\n", "go      " + runtime.Version() + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("fusebox version printed %q, want a line %q", out, want)
		}
	}

	// The metric: a demo of the stamped binary, scraped once it serves.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	demo := exec.CommandContext(ctx, bin, "demo", "--headless", "--duration", "30s", "--http", "127.0.0.1:0", "--jsonl", filepath.Join(dir, "demo.jsonl"))
	stdout, err := demo.StderrPipe() // the demo's banner, with the address, is on stderr
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = demo.Process.Kill(); _ = demo.Wait() }()
	addr := ""
	sc := bufio.NewScanner(stdout)
	re := regexp.MustCompile(`metrics on http://([0-9.:]+)/metrics`)
	for addr == "" && sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("the demo never said where its metrics are (%v)", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := `fusebox_build_info{go_version="` + runtime.Version() + `",revision="0123456789abcdef0123456789abcdef01234567",version="v9.8.7-test"} 1`
	if !strings.Contains(string(body), want) {
		t.Errorf("/metrics has no %s:\n%s", want, grepLines(string(body), "fusebox_build_info"))
	}

	// The Dockerfile's defaults (a build without --build-arg): its
	// REVISION "unknown" is no revision, so `fusebox version` prints no
	// commit line and says the version "dev".
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for _, arg := range []string{"VERSION", "REVISION"} {
		m := regexp.MustCompile(`(?m)^ARG ` + arg + `=(\S+)$`).FindStringSubmatch(string(df))
		if m == nil {
			t.Fatalf("the Dockerfile has no default for its build argument %s", arg)
		}
		defs[arg] = m[1]
	}
	if defs["REVISION"] != "unknown" {
		t.Fatalf("the Dockerfile's default REVISION is %q: the check below assumes unknown", defs["REVISION"])
	}
	dflt := filepath.Join(dir, "fusebox-defaults")
	build = exec.Command(goBin, "build", "-buildvcs=false", "-ldflags", "-s -w "+dockerStampFlags(t, defs["VERSION"], defs["REVISION"]), "-o", dflt, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err = exec.Command(dflt, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "fusebox "+defs["VERSION"]+"\n") || strings.Contains(string(out), "commit") {
		t.Errorf("fusebox version built with the Dockerfile's defaults: %v\n%s", err, out)
	}

	// Unstamped, -buildvcs=false: no revision to print.
	plain := filepath.Join(dir, "fusebox-plain")
	if out, err := exec.Command(goBin, "build", "-buildvcs=false", "-o", plain, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err = exec.Command(plain, "version").CombinedOutput()
	if err != nil || strings.Contains(string(out), "commit") || strings.Contains(string(out), "v9.8.7") {
		t.Errorf("unstamped fusebox version: %v\n%s", err, out)
	}
}
