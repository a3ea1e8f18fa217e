package testharness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// conformanceExempt are tests that call StartBroker but are not
// conformance tests: subprocess helpers (the Go idiom: a Test...HelperProcess
// that skips unless its parent test set an environment variable).
func conformanceExempt(name string) bool { return strings.HasSuffix(name, "HelperProcess") }

// TestConformanceSetFollowsTheConvention parses the test files of the
// module (fuse/, a module of its own, aside) and checks that a test carries
// ConformancePrefix exactly when it uses StartBroker, that there is such a
// test, and that scripts/test's conformance_pkgs are the packages that
// hold them.
//
// "Uses StartBroker" is a heuristic over the syntax, not the types: a
// function uses it when its body (closures included) names StartBroker, or
// names a function or method of the same package (by name; methods of all
// types of the package merge) that uses it. A helper that starts the
// broker only on some path counts as starting it.
func TestConformanceSetFollowsTheConvention(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	byPkg, err := brokerTests(root)
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	total := 0
	for pkg, tests := range byPkg {
		uses := 0
		for name, starts := range tests {
			prefixed := strings.HasPrefix(name, ConformancePrefix)
			switch {
			case conformanceExempt(name):
			case starts && !prefixed:
				t.Errorf("%s: %s takes its broker from StartBroker: name it %s... so that it runs on Apache Kafka too",
					pkg, name, ConformancePrefix)
			case !starts && prefixed:
				t.Errorf("%s: %s does not use StartBroker (a kfake-only or Apache-only test): its name must not start with %s",
					pkg, name, ConformancePrefix)
			case starts:
				uses++
			}
		}
		if uses > 0 {
			pkgs = append(pkgs, "./"+pkg)
			total += uses
		}
	}
	sort.Strings(pkgs)
	if total == 0 {
		t.Fatal("no test uses StartBroker: the Apache Kafka conformance set is empty")
	}
	t.Logf("%d conformance tests in %v", total, pkgs)

	script, err := os.ReadFile(filepath.Join(root, "scripts", "test"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^conformance_pkgs=\(([^)]*)\)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/test has no conformance_pkgs=(...) line")
	}
	listed := strings.Fields(string(m[1]))
	sort.Strings(listed)
	if !slices.Equal(listed, pkgs) {
		t.Errorf("scripts/test's conformance_pkgs are %v; the packages with %s tests are %v", listed, ConformancePrefix, pkgs)
	}
}

// brokerTests returns, by package directory (relative to root), each test
// function of its _test.go files and whether it uses StartBroker.
func brokerTests(root string) (map[string]map[string]bool, error) {
	type fn struct {
		refs map[string]bool
		test bool
	}
	funcs := map[string]map[string]*fn{} // dir -> name -> fn
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "fuse" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if funcs[dir] == nil {
			funcs[dir] = map[string]*fn{}
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			x := funcs[dir][name]
			if x == nil {
				x = &fn{refs: map[string]bool{}}
				funcs[dir][name] = x
			}
			x.test = x.test || fd.Recv == nil && isTest(fd)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name != name {
					x.refs[id.Name] = true
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for dir, fs := range funcs {
		uses := map[string]bool{}
		for name, f := range fs {
			uses[name] = f.refs["StartBroker"]
		}
		for changed := true; changed; {
			changed = false
			for name, f := range fs {
				if uses[name] {
					continue
				}
				for r := range f.refs {
					if uses[r] {
						uses[name], changed = true, true
						break
					}
				}
			}
		}
		for name, f := range fs {
			if f.test {
				if out[dir] == nil {
					out[dir] = map[string]bool{}
				}
				out[dir][name] = uses[name]
			}
		}
	}
	return out, nil
}

// isTest reports whether fd is func TestXxx(t *testing.T).
func isTest(fd *ast.FuncDecl) bool {
	name := fd.Name.Name
	if !strings.HasPrefix(name, "Test") || name == "TestMain" || len(fd.Type.Params.List) != 1 {
		return false
	}
	star, ok := fd.Type.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}
