package testharness

import (
	"os"
	"os/exec"
	"testing"
)

// EnvRequirePromtool, "1", turns a missing promtool into a test failure;
// CI=true does too.
const EnvRequirePromtool = "FUSEBOX_REQUIRE_PROMTOOL"

// Promtool returns the path of Prometheus's promtool on PATH (Debian's
// prometheus package installs /usr/bin/promtool). Missing, it skips the
// test, saying that what goes unchecked and how to install promtool — or
// fails it where CI=true or FUSEBOX_REQUIRE_PROMTOOL=1.
func Promtool(t testing.TB, what string) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" || os.Getenv(EnvRequirePromtool) == "1" {
		t.Fatalf("promtool not found (%v); install Debian's prometheus package (apt-get install prometheus)", err)
	}
	t.Skipf("promtool not found (%v): %s not checked; apt-get install prometheus, or set %s=1 to fail instead", err, what, EnvRequirePromtool)
	return ""
}
