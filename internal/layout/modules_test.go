package layout

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestNestedModules runs the Go tests of every other module of the
// repository (fuse/go.mod, fuse/kafkago/go.mod) but those with a part of
// their own in scripts/test (ownPart): `go test ./...` at the
// root matches the packages of the root module only, never those of a
// nested module, so without this test the fuse module's tests would not
// run from the root. Each runs on its own go.mod (GOWORK=off: as a gateway
// builds it), with -count=1, and -short and -race when this test has them.
//
// It reads every file of the nested modules first, so that go test's
// result cache (which records the files a test opens, not what its child
// processes read) reruns it when one of them changes.
func TestNestedModules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mods := nestedModules(t, root)
	if len(mods) == 0 {
		t.Fatal("no nested go.mod found: the test runs nothing")
	}
	for _, dir := range mods {
		rel, _ := filepath.Rel(root, dir)
		if part, ok := ownPart[filepath.ToSlash(rel)]; ok {
			t.Logf("%s: run by scripts/test's part %q (TestOwnPartModulesRun)", rel, part)
			continue
		}
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			args := []string{"test", "-count=1"}
			if testing.Short() {
				args = append(args, "-short")
			}
			if raceBuild {
				args = append(args, "-race")
			}
			args = append(args, "./...")
			cmd := exec.Command(goTool(), args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOWORK=off")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("go test ./... in %s: %v\n%s", rel, err, out.Bytes())
			}
			t.Logf("go test ./... in %s:\n%s", rel, out.Bytes())
		})
	}
}

// ownPart lists the nested modules whose tests scripts/test runs as a part
// of their own instead of TestNestedModules, by module directory: the
// Helm chart's check compiles Helm and the Kubernetes API types (a few
// minutes on a cold cache), and the release step's test compiles fusebox
// from a module proxy (`go install ...@VERSION`, 1–2 min), which would
// lengthen `go test ./...` for every change of the root module.
var ownPart = map[string]string{
	"deploy/helm/chartcheck": "helm",
	"internal/release":       "release",
}

// TestOwnPartModulesRun checks that each module of ownPart is run after
// all: scripts/test has its part, among the default parts, running go test
// in its directory, and .ci/run vets it (go_modules).
func TestOwnPartModulesRun(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	defaults := regexp.MustCompile(`parts=\$\{FUSEBOX_TEST_PARTS:-([^}]*)\}`).FindSubmatch(script)
	modules := regexp.MustCompile(`(?m)^go_modules=\(([^)]*)\)`).FindSubmatch(ci)
	if defaults == nil || modules == nil {
		t.Fatalf("scripts/test's default parts (%q) or .ci/run's go_modules (%q) not found", defaults, modules)
	}
	for dir, part := range ownPart {
		if _, err := os.Stat(filepath.Join(root, dir, "go.mod")); err != nil {
			t.Errorf("ownPart %s: %v", dir, err)
		}
		if !slices.Contains(strings.Fields(string(defaults[1])), part) {
			t.Errorf("scripts/test: part %q (module %s) is not among the default parts %q", part, dir, defaults[1])
		}
		block := regexp.MustCompile(`(?s)if has_part ` + regexp.QuoteMeta(part) + `; then(.*?)\nfi\n`).FindSubmatch(script)
		if block == nil || !bytes.Contains(block[1], []byte("cd "+dir)) || !bytes.Contains(block[1], []byte("go test")) {
			t.Errorf("scripts/test: no `if has_part %s` block running go test in %s", part, dir)
		}
		if !slices.Contains(strings.Fields(string(modules[1])), dir) {
			t.Errorf(".ci/run: go_modules (%s) does not vet %s", modules[1], dir)
		}
	}
}

// nestedModules returns the directories below root holding a go.mod (dot
// directories aside, and testdata outside them), reading every file of
// those modules on the way (see TestNestedModules).
func nestedModules(t *testing.T, root string) []string {
	t.Helper()
	var mods []string
	inModule := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				mods = append(mods, path)
				inModule[path] = true
			} else if inModule[filepath.Dir(path)] {
				inModule[path] = true // testdata included: the tests read it
			} else if d.Name() == "testdata" || d.Name() == "node_modules" {
				return fs.SkipDir
			}
			return nil
		}
		if inModule[filepath.Dir(path)] {
			if _, err := os.ReadFile(path); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
