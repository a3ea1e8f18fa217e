package layout

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoKafkaClientBelow checks what TestDependenciesPointOneWay cannot see
// file by file: that the engine, the processors and ingest's record and
// handler contract (ingest/batch) do not depend on the Kafka client at
// all, not even through another package (`go list -deps`, tests left
// out). The engine works on plain records; ingest and the router are where
// franz-go is used.
func TestNoKafkaClientBelow(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	cmd := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", "./engine", "./processors/...", "./ingest/batch")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/twmb/franz-go") {
			t.Errorf("engine, processors or ingest/batch depend on %s", p)
		}
	}
}
