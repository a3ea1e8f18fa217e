package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/config"
)

// TestOpenSLOExportImport: `fusebox openslo export` of the example SLO
// file, then `fusebox openslo import` of its output (to files, with
// --out), loads to the same SLOs; an OpenSLO file with Prometheus queries
// is refused (exit 1, every refused field on stderr with its file and
// line, nothing written) unless --allow-partial; bad command lines exit 2.
func TestOpenSLOExportImport(t *testing.T) {
	dir := t.TempDir()
	exported := filepath.Join(dir, "slos.openslo.yaml")
	imported := filepath.Join(dir, "fusebox.yaml")
	if code, _, stderr := runCmd(t, "openslo", "export", "../../examples/fusebox.yaml", "--out", exported); code != exitOK || stderr != "" {
		t.Fatalf("export: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCmd(t, "openslo", "import", "--out", imported, exported); code != exitOK || stderr != "" {
		t.Fatalf("import: exit %d, stderr %q", code, stderr)
	}
	f, err := config.Load("../../examples/fusebox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := config.Load(imported)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(f.SLOs)
	b, _ := json.Marshal(g.SLOs)
	if string(a) != string(b) {
		t.Errorf("the SLOs changed:\n was %s\n now %s", a, b)
	}

	sloth := "../../internal/openslo/testdata/openslo/sloth-v1alpha.yaml"
	code, stdout, stderr := runCmd(t, "openslo", "import", sloth)
	if code != exitFailure || stdout != "" ||
		!strings.Contains(stderr, sloth+":16: document 1 (SLO my-service-availability): spec.objectives[0].ratioMetrics.good: a prometheus query is not mapped") ||
		!strings.Contains(stderr, "2 field(s) refused, nothing written") {
		t.Errorf("import of Prometheus queries: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCmd(t, "openslo", "import", "--allow-partial", sloth)
	if code != exitOK || !strings.Contains(stdout, "name: my-service-availability") || !strings.Contains(stderr, "1 SLO(s) written with 2 refused field(s)") {
		t.Errorf("--allow-partial: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := config.Parse("partial.yaml", []byte(stdout)); err != nil {
		t.Errorf("the partial import does not load: %v", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("slos:\n  - name: x\n    tail: {p: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "openslo", "export", bad); code != exitFailure || !strings.Contains(stderr, bad+":3: slos[0].tail") {
		t.Errorf("export of an invalid file: exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{{"openslo"}, {"openslo", "expot"}, {"openslo", "export"}, {"openslo", "import"}, {"openslo", "import", "--partial", "x"}} {
		if code, _, stderr := runCmd(t, args...); code != exitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, code, stderr)
		}
	}
}

// TestOpenSLOImportPartialLoads: --allow-partial leaves out of the file it
// writes every SLO that `fusebox config check` would refuse — here a tail
// SLO whose objective's op gt is refused, which would leave it without a
// budget — names each on stderr, and writes a file that config check
// accepts, with the SLOs that mapped.
func TestOpenSLOImportPartialLoads(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "slos.openslo.yaml")
	doc := func(name, op string) string {
		return "apiVersion: openslo/v1\nkind: SLO\nmetadata:\n  name: " + name + "\nspec:\n  service: chat\n  indicator:\n    metadata: {name: " + name + "}\n    spec:\n      thresholdMetric:\n        metricSource:\n          type: fusebox\n          spec: {metric: ttft_ms}\n  budgetingMethod: Occurrences\n  objectives:\n    - {op: " + op + ", value: 1500, target: 0.99}\n"
	}
	if err := os.WriteFile(in, []byte(doc("chat-ttft", "gt")+"---\n"+doc("chat-ok", "lte")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "fusebox.yaml")
	code, _, stderr := runCmd(t, "openslo", "import", "--allow-partial", "--out", out, in)
	if code != exitOK ||
		!strings.Contains(stderr, in+":16: document 1 (SLO chat-ttft): spec.objectives[0].op: want lte for a tail SLO, got \"gt\"") ||
		!strings.Contains(stderr, in+": document 1 (SLO chat-ttft): left out of the written file: fusebox config check refuses it") ||
		!strings.Contains(stderr, "1 SLO(s) written") {
		t.Errorf("import --allow-partial: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := runCmd(t, "config", "check", out); code != exitOK {
		b, _ := os.ReadFile(out)
		t.Errorf("config check of the partial import: exit %d, stdout %q, stderr %q\n%s", code, stdout, stderr, b)
	}
	g, err := config.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.SLOs) != 1 || g.SLOs[0].Name != "chat-ok" {
		t.Errorf("the partial import holds %+v, want chat-ok alone", g.SLOs)
	}
}
