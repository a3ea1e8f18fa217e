package testharness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Environment of the browser tests.
const (
	// EnvChromium names the Chromium (or Chrome) binary; default the first
	// of chromium, chromium-browser, google-chrome on PATH.
	EnvChromium = "FUSEBOX_CHROMIUM"
	// EnvRequireChromium, when true, turns a missing Chromium into a test
	// failure; CI=true does too (the page's tests must run in CI).
	EnvRequireChromium = "FUSEBOX_REQUIRE_CHROMIUM"
	// EnvArtifacts is the directory tests write artifacts into (the live
	// page's screenshots); default a temporary directory, logged.
	EnvArtifacts = "FUSEBOX_ARTIFACTS"
)

// Chromium is a headless Chromium for tests: Debian's chromium package,
// driven by its command line (--dump-dom, --screenshot). No browser is
// downloaded.
type Chromium struct {
	Path string
}

// StartChromium finds Chromium, or skips the test with how to install it
// — or fails it when FUSEBOX_REQUIRE_CHROMIUM or CI is true.
func StartChromium(t testing.TB) *Chromium {
	t.Helper()
	path := os.Getenv(EnvChromium)
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		msg := "no Chromium: install Debian's chromium package (apt-get install chromium) or set " + EnvChromium + " to a Chromium binary"
		if envTrue(EnvRequireChromium) || envTrue("CI") {
			t.Fatalf("%s (%s or CI is true: the browser tests may not skip)", msg, EnvRequireChromium)
		}
		t.Skip(msg)
	}
	return &Chromium{Path: path}
}

func envTrue(name string) bool {
	b, _ := strconv.ParseBool(os.Getenv(name))
	return b
}

// run runs Chromium headless on url with extra flags; it lets the page's
// scripts run for budget of virtual time (Chromium pauses virtual time
// while fetches are pending, so the page's API calls complete).
func (c *Chromium) run(t testing.TB, url string, budget time.Duration, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
		"--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=" + strconv.FormatInt(budget.Milliseconds(), 10),
	}, flags...)
	args = append(args, url)
	cmd := exec.CommandContext(ctx, c.Path, args...)
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", c.Path, args, err, stderr.String())
	}
	return out
}

// DumpDOM loads url and returns the DOM after its scripts ran for budget
// of virtual time, serialised as HTML.
func (c *Chromium) DumpDOM(t testing.TB, url string, budget time.Duration) string {
	t.Helper()
	return string(c.run(t, url, budget, "--dump-dom"))
}

// Screenshot loads url in a window of width×height pixels and writes a PNG
// of it to path.
func (c *Chromium) Screenshot(t testing.TB, url, path string, width, height int, budget time.Duration) {
	t.Helper()
	c.run(t, url, budget, "--screenshot="+path, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height))
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("chromium wrote no screenshot to %s: %v", path, err)
	}
}

// ArtifactsDir returns the directory for test artifacts:
// $FUSEBOX_ARTIFACTS (created), else a temporary directory that outlives
// the test; it logs which.
func ArtifactsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvArtifacts)
	if dir == "" {
		d, err := os.MkdirTemp("", "fusebox-artifacts-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%s=%s: %v", EnvArtifacts, dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		dir = abs
	}
	t.Logf("test artifacts go to %s (%s)", dir, EnvArtifacts)
	return dir
}

// limitedBuffer keeps the first 64 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
