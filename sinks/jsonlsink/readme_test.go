package jsonlsink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
)

// verdictsDoc is the manual's page with the JSONL section (relative to
// this package).
const verdictsDoc = "../../docs/verdicts.md"

// readmeSection returns the "## The JSONL file" section of verdictsDoc.
func readmeSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(verdictsDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## The JSONL file\n")
	if i < 0 {
		t.Fatal(verdictsDoc + ` has no "## The JSONL file" section`)
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	return s
}

// TestREADMEJSONLExample: the example lines of the manual's JSONL section
// decode with Read (one verdict, one fuse command), and a Sink given what
// they decode to writes exactly those lines; every member of both objects
// (and of key, target and reasons) is documented in the section's tables.
func TestREADMEJSONLExample(t *testing.T) {
	sec := readmeSection(t)
	i := strings.Index(sec, "```jsonl\n")
	j := strings.Index(sec[i+1:], "\n```")
	if i < 0 || j < 0 {
		t.Fatal("the JSONL section has no ```jsonl block")
	}
	example := sec[i+len("```jsonl\n") : i+1+j+1]
	vs, cs, err := jsonlsink.Read([]byte(example))
	if err != nil {
		t.Fatalf("the example of %s does not decode: %v", verdictsDoc, err)
	}
	if len(vs) != 1 || len(cs) != 1 {
		t.Fatalf("the example holds %d verdicts and %d commands, want one of each", len(vs), len(cs))
	}
	path := filepath.Join(t.TempDir(), "out.jsonl")
	sink, err := jsonlsink.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(context.Background(), schemas.Output{Verdicts: vs, Commands: cs}); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte(example)) {
		t.Errorf("the sink writes\n%s\n%s shows\n%s", got, verdictsDoc, example)
	}

	// Every member is in a table row: "| `name`" or "`name`, `other`".
	documented := func(name string) bool {
		for _, l := range strings.Split(sec, "\n") {
			if strings.HasPrefix(l, "| ") && strings.Contains(strings.SplitN(l[2:], "|", 2)[0], "`"+name+"`") {
				return true
			}
		}
		return false
	}
	for _, line := range strings.Split(strings.TrimSpace(example), "\n") {
		var outer map[string]map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &outer); err != nil {
			t.Fatal(err)
		}
		for kind, obj := range outer {
			for name, raw := range obj {
				if !documented(name) {
					t.Errorf("%s member %q is not documented in %s", kind, name, verdictsDoc)
				}
				if name == "key" || name == "target" {
					var sub map[string]string
					_ = json.Unmarshal(raw, &sub)
					for n := range sub {
						if !strings.Contains(sec, "`"+n+"`") {
							t.Errorf("%s.%s member %q is not documented", kind, name, n)
						}
					}
				}
				if name == "reasons" {
					var sub []map[string]any
					_ = json.Unmarshal(raw, &sub)
					for n := range sub[0] {
						if !strings.Contains(sec, n) {
							t.Errorf("%s.reasons member %q is not documented", kind, n)
						}
					}
				}
			}
		}
	}
}
