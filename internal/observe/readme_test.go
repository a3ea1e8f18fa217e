package observe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEMetricTableMatchesHelp checks the README's table of the fixed
// metric families against Families: every family has one row, in order,
// with its type, its labels and its HELP text word for word (the HELP is
// what an operator sees in Prometheus; the README must not say otherwise).
func TestREADMEMetricTableMatchesHelp(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	const header = "| metric | type | labels | HELP |\n|---|---|---|---|\n"
	i := strings.Index(text, header)
	if i < 0 {
		t.Fatalf("README.md has no table headed %q", header)
	}
	body := text[i+len(header):]
	if j := strings.Index(body, "\n\n"); j >= 0 {
		body = body[:j]
	}
	rows := strings.Split(strings.TrimSpace(body), "\n")
	fams := Families()
	if len(rows) != len(fams) {
		t.Errorf("the README's table has %d rows, Families %d", len(rows), len(fams))
	}
	for k, f := range fams {
		labels := "—"
		if len(f.Labels) > 0 {
			labels = strings.Join(f.Labels, ", ")
		}
		want := "| `" + f.Name + "` | " + f.Type + " | " + labels + " | " + f.Help + " |"
		if k >= len(rows) {
			t.Errorf("row missing: %s", want)
			continue
		}
		if rows[k] != want {
			t.Errorf("README row %d:\n got %s\nwant %s", k+1, rows[k], want)
		}
	}
}
