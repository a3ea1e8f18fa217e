package chartcheck

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"testing"
)

// symlinkLine starts the line Helm's chart loader logs for each symbolic
// link it follows (files/ links to deploy/prometheus and deploy/grafana),
// for every render (helm.sh/helm/v3/internal/sympath).
const symlinkLine = "found symbolic link in path: "

// helmLogFilter drops Helm's symbolic-link lines and passes every other
// line of the standard logger to stderr.
type helmLogFilter struct{}

func (helmLogFilter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(symlinkLine)) {
		return len(p), nil
	}
	return os.Stderr.Write(p)
}

// TestMain filters the standard logger's output: only Helm's
// symbolic-link lines are dropped; anything else logged still shows.
func TestMain(m *testing.M) {
	log.SetOutput(helmLogFilter{})
	code := m.Run()
	if fuseboxBin != "" && fuseboxErr == nil {
		os.RemoveAll(filepath.Dir(fuseboxBin)) // the fusebox built by config_test.go
	}
	os.Exit(code)
}
