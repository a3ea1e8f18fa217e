package deploy

import (
	"testing"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// TestMain runs the tests through the harness, which stops the ClickHouse
// server the Grafana test starts.
func TestMain(m *testing.M) { testharness.Main(m) }
