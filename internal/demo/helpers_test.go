package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// readJSONL returns the verdicts and commands of a JSONL sink file.
func readJSONL(t *testing.T, path string) ([]schemas.Verdict, []schemas.FuseCommand) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vs []schemas.Verdict
	var cs []schemas.FuseCommand
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Verdict json.RawMessage `json:"verdict"`
			Fuse    json.RawMessage `json:"fuse_command"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("bad JSONL line %q: %v", sc.Text(), err)
		}
		if line.Verdict != nil {
			v, err := sinks.UnmarshalVerdictJSON(line.Verdict)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		if line.Fuse != nil {
			c, err := schemas.DecodeFuseCommand(line.Fuse)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
	}
	return vs, cs
}
