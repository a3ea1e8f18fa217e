package demo

import (
	"os"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
)

// readJSONL returns the verdicts and commands of a JSONL sink file.
func readJSONL(t *testing.T, path string) ([]schemas.Verdict, []schemas.FuseCommand) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vs, cs, err := jsonlsink.Read(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return vs, cs
}
