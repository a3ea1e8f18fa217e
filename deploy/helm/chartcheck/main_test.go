package chartcheck

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"
)

// TestMain silences the standard logger: Helm's chart loader logs a line
// for each symbolic link it follows (files/ links to deploy/prometheus and
// deploy/grafana), for every render.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	code := m.Run()
	if fuseboxBin != "" && fuseboxErr == nil {
		os.RemoveAll(filepath.Dir(fuseboxBin)) // the fusebox built by config_test.go
	}
	os.Exit(code)
}
