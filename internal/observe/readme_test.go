package observe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// metricsDoc is the manual's page with the table of the fixed metric
// families (relative to this package).
var metricsDoc = filepath.Join("..", "..", "docs", "operations.md")

// TestREADMEMetricTableMatchesHelp checks the table of the fixed
// metric families against Families: every family has one row, in order,
// with its type, its labels and its HELP text word for word (the HELP is
// what an operator sees in Prometheus; the manual must not say otherwise).
func TestREADMEMetricTableMatchesHelp(t *testing.T) {
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	const header = "| metric | type | labels | HELP |\n|---|---|---|---|\n"
	i := strings.Index(text, header)
	if i < 0 {
		t.Fatalf("%s has no table headed %q", metricsDoc, header)
	}
	body := text[i+len(header):]
	if j := strings.Index(body, "\n\n"); j >= 0 {
		body = body[:j]
	}
	rows := strings.Split(strings.TrimSpace(body), "\n")
	fams := Families()
	if len(rows) != len(fams) {
		t.Errorf("the table of %s has %d rows, Families %d", metricsDoc, len(rows), len(fams))
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
			t.Errorf("%s row %d:\n got %s\nwant %s", metricsDoc, k+1, rows[k], want)
		}
	}
}
