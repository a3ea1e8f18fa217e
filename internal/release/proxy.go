package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// trackedFile is a file of the repository as git has it: its path
// relative to the repository root (slashes) and whether git records it
// as a symbolic link or a submodule, which module zips leave out.
type trackedFile struct {
	path    string
	special bool
}

// gitFiles lists the files git tracks in repo (`git ls-files`: the index,
// which for a clean tree is HEAD), with their modes.
func gitFiles(repo string) ([]trackedFile, error) {
	out, err := exec.Command("git", "-C", repo, "ls-files", "-s", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v", repo, cmdErr(err))
	}
	var files []trackedFile
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		// "<mode> <object> <stage>\t<path>"
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			return nil, fmt.Errorf("git ls-files: unexpected record %q", rec)
		}
		mode := strings.Fields(meta)[0]
		files = append(files, trackedFile{path: p, special: mode == "120000" || mode == "160000"})
	}
	return files, nil
}

// module is one Go module of the repository: its path and its directory
// relative to the repository root ("" for the root module).
type module struct {
	path string
	dir  string
}

// zipFiles picks the files of mod's zip from the repository's files, as
// the go command does when it makes the zip of a tagged module from git
// (golang.org/x/mod/zip.Create as cmd/go's coderepo calls it): the files
// under mod.dir, without those of nested modules (directories with a
// go.mod of their own), of vendored packages, symbolic links and
// submodules; and a module in a subdirectory without a LICENSE of its own
// gets the repository root's LICENSE. It returns zip names relative to
// the module root mapped to paths relative to the repository root.
func zipFiles(files []trackedFile, mod module) map[string]string {
	prefix := ""
	if mod.dir != "" {
		prefix = mod.dir + "/"
	}
	nested := map[string]bool{} // directories below the module root with a go.mod
	for _, f := range files {
		if rel, ok := strings.CutPrefix(f.path, prefix); ok && path.Base(rel) == "go.mod" && rel != "go.mod" && !f.special {
			nested[path.Dir(rel)] = true
		}
	}
	inNested := func(rel string) bool {
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if nested[d] {
				return true
			}
		}
		return false
	}
	picked := map[string]string{}
	for _, f := range files {
		rel, ok := strings.CutPrefix(f.path, prefix)
		if !ok || f.special || inNested(rel) || vendored(rel) || rel == ".hg_archival.txt" {
			continue
		}
		picked[rel] = f.path
	}
	if _, ok := picked["LICENSE"]; !ok && mod.dir != "" {
		for _, f := range files {
			if f.path == "LICENSE" && !f.special {
				picked["LICENSE"] = "LICENSE"
			}
		}
	}
	return picked
}

// vendored reports whether rel is a file of a vendored package (Go 1.24
// and later rules: below a vendor directory and in a package of its own,
// or vendor/modules.txt).
func vendored(rel string) bool {
	if rel == "vendor/modules.txt" {
		return true
	}
	var i int
	if strings.HasPrefix(rel, "vendor/") {
		i = len("vendor/")
	} else if j := strings.Index(rel, "/vendor/"); j >= 0 {
		i = j + len("/vendor/")
	} else {
		return false
	}
	return strings.Contains(rel[i:], "/")
}

// writeModule writes mod at version into the file module proxy at dir, in
// the layout GOPROXY=file://DIR reads: DIR/<escaped path>/@v/ with list,
// VERSION.info, VERSION.mod and VERSION.zip (every name prefixed
// "path@version/"). The content is read from the repository's working
// tree, so edits the release step made (go.mod, go.sum) are in it.
func writeModule(dir, repo string, files []trackedFile, mod module, version string) error {
	vdir := filepath.Join(dir, filepath.FromSlash(escapePath(mod.path)), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	picked := zipFiles(files, mod)
	if _, ok := picked["go.mod"]; !ok {
		return fmt.Errorf("module %s: no go.mod in %q", mod.path, mod.dir)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for rel, src := range picked {
		data, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(src)))
		if err != nil {
			return fmt.Errorf("module %s: %v", mod.path, err)
		}
		w, err := zw.Create(mod.path + "@" + version + "/" + rel)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(picked["go.mod"])))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  gomod,
		version + ".zip":  buf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// escapePath is a module path as the module proxy protocol and the
// module cache spell it: each upper-case letter as '!' and its lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cmdErr adds a failed command's stderr to its error.
func cmdErr(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
