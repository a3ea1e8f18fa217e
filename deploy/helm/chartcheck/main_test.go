package chartcheck

import (
	"io"
	"log"
	"os"
	"testing"
)

// TestMain silences the standard logger: Helm's chart loader logs a line
// for each symbolic link it follows (files/ links to deploy/prometheus and
// deploy/grafana), for every render.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}
