package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/fusebox-dev/fusebox/"

// rule says which packages of the module the Go files under dir may
// import (by path prefix), and which outside import paths they must not.
type rule struct {
	dir       string   // relative to the module root; "engine/" is engine and below, "engine" only engine
	allow     []string // module-relative prefixes; nil: any package of the module not denied
	deny      []string // module-relative prefixes, checked when allow is nil
	forbid    []string // external prefixes
	withTests bool     // check _test.go files too
}

var rules = []rule{
	{dir: "stats/", allow: []string{}},
	// schemas re-exports the fuse command of fuse/fuseschema (standard
	// library only, like schemas itself but for protowire).
	{dir: "schemas/", allow: []string{"fuse/fuseschema"}},
	{dir: "processors/", allow: []string{"processors", "stats", "schemas"}},
	// Each kind's package exports its own Kind; the registry is the list
	// of them and sits above every kind.
	{dir: "processors/", deny: []string{"processors/registry"}},
	{dir: "ingest/", allow: []string{"schemas", "ingest"}},
	{dir: "sinks/", allow: []string{"schemas", "sinks"}},
	// The engine uses interfaces and plain records: no Kafka client types,
	// and of ingest only its franz-free contract (TestNoKafkaClientBelow
	// checks the transitive imports).
	{dir: "engine", allow: []string{"schemas", "processors", "ingest/batch"}, forbid: []string{"github.com/twmb/franz-go"}},
	{dir: "ingest/batch", allow: []string{"schemas"}, forbid: []string{"github.com/twmb/franz-go"}},
	// The router writes the keyed-record format of schemas, not its parent's.
	{dir: "engine/router", allow: []string{"schemas", "ingest"}},
	// The gateway library is a module of its own (fuse/go.mod): its
	// packages, tests included, import nothing of this module.
	{dir: "fuse/", allow: []string{"fuse"}, withTests: true},
	// The live page reads verdicts and commands (schemas) from its own
	// store; run and demo wire it. No engine, pipeline or Kafka types.
	{dir: "internal/ui/", allow: []string{"schemas", "internal/ui"}, forbid: []string{"github.com/twmb/franz-go"}},
	// Product libraries under internal/: the SLO file (and what every
	// partition worker runs, built from it), logs and metrics, the embedded
	// broker. Below pipeline: none of them imports it or a command.
	{dir: "internal/config/", allow: []string{"internal/config", "engine", "processors", "schemas", "stats"}},
	{dir: "internal/observe/", allow: []string{"internal/observe"}},
	{dir: "internal/broker/", allow: []string{"internal/broker"}},
	// Simulation: generated traffic, its publisher and the engine replay
	// (benchmarks, studies, calibrate). It drives the engine directly,
	// never the Kafka and ClickHouse assembly.
	{dir: "internal/sim/", allow: []string{"internal/sim", "internal/config", "engine", "processors", "schemas", "stats"}},
	// Test tooling: brokers and ClickHouse servers for tests, and the
	// Python suites' harness. It assembles nothing of the product; its
	// kfake is the embedded broker's.
	{dir: "internal/testharness/", allow: []string{"internal/testharness", "internal/broker", "fuse", "schemas"}},
	// Nothing under internal/ (tests included) imports pipeline or a
	// command: the commands under cmd/ assemble and run the product.
	{dir: "internal/", deny: []string{"pipeline", "cmd"}, withTests: true},
	// The pipeline is assembled by commands; it imports none.
	{dir: "pipeline/", deny: []string{"cmd"}, withTests: true},
}

func TestDependenciesPointOneWay(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]int{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, r := range rules {
			if !(dir == strings.TrimSuffix(r.dir, "/") || strings.HasSuffix(r.dir, "/") && strings.HasPrefix(dir+"/", r.dir)) {
				continue
			}
			if strings.HasSuffix(rel, "_test.go") && !r.withTests {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked[r.dir]++
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if own, ok := strings.CutPrefix(p, module); ok {
					switch {
					case r.allow != nil && !allowed(own, r.allow):
						t.Errorf("%s imports %s: %s may import only %v of the module", rel, own, r.dir, r.allow)
					case r.allow == nil && allowed(own, r.deny):
						t.Errorf("%s imports %s: %s must not import %v", rel, own, r.dir, r.deny)
					}
				}
				for _, f := range r.forbid {
					if strings.HasPrefix(p, f) {
						t.Errorf("%s imports %s, which %s must not", rel, p, r.dir)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.allow == nil && len(r.deny) == 0 {
			t.Errorf("the rule for %s has neither allow nor deny: it checks nothing (allow: []string{} is \"nothing of the module\")", r.dir)
		}
		if checked[r.dir] == 0 {
			t.Errorf("no Go file under %s: the rule checks nothing", r.dir)
		}
	}
}

func allowed(p string, prefixes []string) bool {
	for _, a := range prefixes {
		if p == a || strings.HasPrefix(p, a+"/") {
			return true
		}
	}
	return false
}
