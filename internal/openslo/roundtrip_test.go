package openslo

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/registry"
)

// sloFiles are the SLO files of the repository, and one with every field
// of every kind away from its default.
var sloFiles = []string{
	"../../examples/fusebox.yaml",
	"../../deploy/fusebox.yaml",
	"../../internal/sim/replay/production.yaml",
	"testdata/every-field.yaml",
}

// canonical is the loaded SLOs as the configuration hash sees them: every
// field of every section, defaults included.
func canonical(t *testing.T, f *config.File) string {
	t.Helper()
	b, err := json.Marshal(f.SLOs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// roundTrip exports f, imports the export and loads the result; it fails
// on any problem, note or refusal.
func roundTrip(t *testing.T, name string, f *config.File) (*config.File, []byte) {
	t.Helper()
	out, err := Export(f)
	if err != nil {
		t.Fatalf("%s: export: %v", name, err)
	}
	res, err := Importer{}.Import([]Input{{Name: name + ".openslo.yaml", Data: out}})
	if err != nil {
		t.Fatalf("%s: import: %v", name, err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("%s: import of the export has problems:\n%s\nexport:\n%s", name, res.Problems.Error(), out)
	}
	g, err := config.Parse(name+".imported.yaml", res.File)
	if err != nil {
		t.Fatalf("%s: the imported file does not load: %v\n%s", name, err, res.File)
	}
	if res.SLOs != len(f.SLOs) {
		t.Errorf("%s: %d SLOs imported, want %d", name, res.SLOs, len(f.SLOs))
	}
	return g, out
}

// TestRoundTripFuseboxOpenSLOFusebox: every SLO file of the repository,
// exported to OpenSLO and imported back, loads to the same SLOs, every
// field of every section (the configuration hash's bytes); exporting the
// import again gives the same OpenSLO bytes.
func TestRoundTripFuseboxOpenSLOFusebox(t *testing.T) {
	for _, path := range sloFiles {
		f, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		g, out := roundTrip(t, path, f)
		if a, b := canonical(t, f), canonical(t, g); a != b {
			t.Errorf("%s: the SLOs changed in the round trip:\n was %s\n now %s", path, a, b)
		}
		again, err := Export(g)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, again) {
			t.Errorf("%s: the second export differs from the first:\n%s\n---- vs ----\n%s", path, out, again)
		}
	}
}

// TestRoundTripDocsMinimalFile: the minimal file of docs/configuration.md
// round-trips too.
func TestRoundTripDocsMinimalFile(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## A minimal file")
	_, rest, ok2 := strings.Cut(rest, "```yaml\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/configuration.md has no yaml block under \"A minimal file\"")
	}
	f, err := config.Parse("minimal.yaml", []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := roundTrip(t, "minimal", f)
	if a, b := canonical(t, f), canonical(t, g); a != b {
		t.Errorf("the SLOs changed in the round trip:\n was %s\n now %s", a, b)
	}
}

// TestEveryKindExports: each kind of the registry, at its sample and at
// its defaults, exports and comes back unchanged, with its kind named.
func TestEveryKindExports(t *testing.T) {
	for _, k := range registry.Kinds() {
		for _, c := range []struct {
			what string
			cfg  func() any
		}{{"sample", func() any { return k.Sample() }}, {"default", func() any { return k.Default() }}} {
			sec := k.Sample()
			if c.what == "default" {
				sec = k.Default()
				if sec.Validate() != nil {
					continue // a kind whose defaults need a budget
				}
			}
			f := &config.File{SLOs: []config.SLO{{Name: k.Name + "-" + c.what, Sections: []config.Section{{Kind: k, Config: sec}}}}}
			out, err := Export(f)
			if err != nil {
				t.Fatalf("%s %s: %v", k.Name, c.what, err)
			}
			if !strings.Contains(string(out), Prefix+annKind+": "+k.Name+"\n") {
				t.Errorf("%s %s: the export does not name the kind:\n%s", k.Name, c.what, out)
			}
			g, _ := roundTrip(t, k.Name+"-"+c.what, f)
			if a, b := canonical(t, f), canonical(t, g); a != b {
				t.Errorf("%s %s: changed in the round trip:\n was %s\n now %s", k.Name, c.what, a, b)
			}
		}
	}
}

// TestImportAcrossFiles: references resolve across the files given; the
// export split over two files (SLOs in one, everything else in the other)
// imports to the same SLOs, and a reference to a file not given is named.
func TestImportAcrossFiles(t *testing.T) {
	f, err := config.Load("testdata/every-field.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Export(f)
	if err != nil {
		t.Fatal(err)
	}
	var slos, rest []string
	for _, d := range strings.Split(string(out), "---\n") {
		if strings.Contains(d, "\nkind: SLO\n") {
			slos = append(slos, d)
		} else {
			rest = append(rest, d)
		}
	}
	a := Input{Name: "slos.yaml", Data: []byte(strings.Join(slos, "---\n"))}
	b := Input{Name: "rest.yaml", Data: []byte(strings.Join(rest, "---\n"))}
	res, err := Importer{}.Import([]Input{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("problems:\n%s", res.Problems.Error())
	}
	g, err := config.Parse("imported", res.File)
	if err != nil {
		t.Fatal(err)
	}
	if canonical(t, f) != canonical(t, g) {
		t.Error("the SLOs changed")
	}
	res, err = Importer{}.Import([]Input{a})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Problems.Error(), `slos.yaml:18: document 1 (SLO chat-latency): spec.indicatorRef: no SLI named "chat-latency" in the files`) {
		t.Errorf("the SLOs alone:\n%s", res.Problems.Error())
	}
}
