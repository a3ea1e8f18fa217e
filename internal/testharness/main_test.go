package testharness

import (
	"os"
	"testing"
)

// envNoMain makes TestMain skip Main, so a subprocess can show what
// StartClickHouse says without it.
const envNoMain = "FUSEBOX_TESTHARNESS_NO_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envNoMain) == "1" {
		os.Exit(m.Run())
	}
	Main(m)
}
