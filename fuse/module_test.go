package fuse_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The fuse module is what gateways import: its requirements are what every
// gateway inherits. These tests keep them to franz-go (and what franz-go
// itself needs), keep the module free of the fusebox module, and keep
// fuseschema on the standard library.

// thisModule is the fuse module's path.
const thisModule = "github.com/fusebox-dev/fusebox/fuse"

// franzGoDeps are the modules franz-go requires (compression codecs); they
// may appear in fuse/go.mod only as indirect requirements.
var franzGoDeps = []string{"github.com/klauspost/compress", "github.com/pierrec/lz4/v4"}

// requirement is one line of a go.mod require directive.
type requirement struct {
	path     string
	indirect bool
}

// readGoMod returns the module path, the requirements and the replace
// directives of a go.mod file (a small reader of the directives used here:
// module, go, require and replace, single-line or in blocks).
func readGoMod(t *testing.T, file string) (module string, reqs []requirement, replaces []string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		indirect := strings.HasSuffix(line, "// indirect")
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		if line == ")" {
			block = ""
			continue
		}
		fields := strings.Fields(line)
		directive := block
		if block == "" {
			directive, fields = fields[0], fields[1:]
			if len(fields) == 1 && fields[0] == "(" {
				block = directive
				continue
			}
		}
		switch directive {
		case "module":
			module = fields[0]
		case "require":
			reqs = append(reqs, requirement{path: fields[0], indirect: indirect})
		case "replace":
			replaces = append(replaces, strings.Join(fields, " "))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return module, reqs, replaces
}

func TestModuleRequiresOnlyFranzGo(t *testing.T) {
	module, reqs, replaces := readGoMod(t, "go.mod")
	if module != thisModule {
		t.Fatalf("go.mod: module %q, want %q", module, thisModule)
	}
	if len(replaces) > 0 {
		// A consumer ignores them: the module must build without.
		t.Errorf("go.mod has replace directives %q: the fuse module must build as published", replaces)
	}
	for _, r := range reqs {
		switch {
		case r.path == "github.com/twmb/franz-go" || strings.HasPrefix(r.path, "github.com/twmb/franz-go/"):
		case r.indirect && slices.Contains(franzGoDeps, r.path):
		default:
			t.Errorf("go.mod requires %s (indirect %v): the fuse module may require only franz-go's modules, and %v indirectly", r.path, r.indirect, franzGoDeps)
		}
	}
	if len(reqs) == 0 {
		t.Error("go.mod requires nothing: the reader found no require directive")
	}
}

func TestKafkaGoModuleRequiresOnlyFuseAndKafkaGo(t *testing.T) {
	module, reqs, _ := readGoMod(t, filepath.Join("kafkago", "go.mod"))
	if module != thisModule+"/kafkago" {
		t.Fatalf("kafkago/go.mod: module %q, want %q", module, thisModule+"/kafkago")
	}
	for _, r := range reqs {
		if r.indirect {
			continue // the fuse module's and kafka-go's, checked there
		}
		if r.path != thisModule && r.path != "github.com/segmentio/kafka-go" {
			t.Errorf("kafkago/go.mod requires %s directly: want only %s and github.com/segmentio/kafka-go", r.path, thisModule)
		}
	}
}

// TestImportsStayInTheModule checks every Go file of the module, tests
// included: nothing of the fusebox module (github.com/fusebox-dev/fusebox
// outside fuse/), and fuseschema imports the standard library only (its
// tests too) and its own sub-packages (jsonw), which keep the same rule.
func TestImportsStayInTheModule(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, "github.com/fusebox-dev/fusebox/") && p != thisModule && !strings.HasPrefix(p, thisModule+"/") {
				t.Errorf("%s imports %s: the fuse module imports nothing of the fusebox module", path, p)
			}
			inSchema := dir == "fuseschema" || strings.HasPrefix(dir, "fuseschema/")
			if inSchema && strings.Contains(strings.SplitN(p, "/", 2)[0], ".") && !strings.HasPrefix(p, thisModule+"/fuseschema/") {
				t.Errorf("%s imports %s: fuseschema imports the standard library only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go file found: the test checks nothing")
	}
}
