package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The modules of the repository in the order the release step serves them
// from its proxy: each after the modules it requires (fuse/kafkago
// requires fuse; the root requires both). The fuse modules are tagged
// <dir>/VERSION, the root VERSION.
var modules = []module{
	{path: "github.com/fusebox-dev/fusebox/fuse", dir: "fuse"},
	{path: "github.com/fusebox-dev/fusebox/fuse/kafkago", dir: "fuse/kafkago"},
	{path: "github.com/fusebox-dev/fusebox", dir: ""},
}

// installPackage is what users install: `go install installPackage@VERSION`.
const installPackage = "github.com/fusebox-dev/fusebox/cmd/fusebox"

// tag is the git tag of mod at version.
func tag(mod module, version string) string {
	if mod.dir == "" {
		return version
	}
	return mod.dir + "/" + version
}

// goModJSON is what `go mod edit -json` says of a go.mod that matters here.
type goModJSON struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path string }
	}
}

// releaseGoMods rewrites the go.mod of every module in repo into its
// release form: a replace of another module of the repository dropped,
// and a requirement of one required at version. Main keeps the replace
// directives (development builds the modules from their directories);
// `go install ...@VERSION` refuses a module whose go.mod has any. It
// returns the go.mod files it changed.
func releaseGoMods(repo, version string) ([]string, error) {
	ours := map[string]bool{}
	for _, m := range modules {
		ours[m.path] = true
	}
	var changed []string
	for _, m := range modules {
		dir := filepath.Join(repo, filepath.FromSlash(m.dir))
		out, err := goCmd(dir, nil, "mod", "edit", "-json")
		if err != nil {
			return nil, err
		}
		var gm goModJSON
		if err := json.Unmarshal(out, &gm); err != nil {
			return nil, fmt.Errorf("%s/go.mod: %v", m.dir, err)
		}
		touch := map[string]bool{}
		for _, r := range gm.Require {
			if ours[r.Path] {
				touch[r.Path] = true
			}
		}
		for _, r := range gm.Replace {
			if ours[r.Old.Path] {
				touch[r.Old.Path] = true
			}
		}
		if len(touch) == 0 {
			continue
		}
		args := []string{"mod", "edit"}
		for _, o := range modules { // in a fixed order
			if touch[o.path] {
				args = append(args, "-dropreplace="+o.path, "-require="+o.path+"@"+version)
			}
		}
		if _, err := goCmd(dir, nil, args...); err != nil {
			return nil, err
		}
		changed = append(changed, filepath.ToSlash(filepath.Join(m.dir, "go.mod")))
	}
	return changed, nil
}

// options are the release step's settings (see usage in main.go).
type options struct {
	repo    string
	version string
	tag     bool   // commit on branch release/VERSION and tag, locally
	push    string // remote to push the tags to ("" no push)
}

// release turns the clean checkout at o.repo into the release form of
// o.version, checks that `go install installPackage@VERSION` builds from a
// module proxy serving exactly those files and that the binary says
// VERSION, and prints (or with o.tag runs) the git commands that commit
// and tag it. Progress goes to log, the commands to stdout.
func release(o options, stdout, log io.Writer) error {
	if err := checkVersion(o.version); err != nil {
		return err
	}
	if o.push != "" && !o.tag {
		return fmt.Errorf("-push needs -tag: only tags this step made are pushed")
	}
	status, err := exec.Command("git", "-C", o.repo, "status", "--porcelain").Output()
	if err != nil {
		return fmt.Errorf("git status in %s: %v", o.repo, cmdErr(err))
	}
	if len(bytes.TrimSpace(status)) > 0 {
		return fmt.Errorf("%s has uncommitted changes or untracked files; the release form must be the committed tree plus the release step's edits:\n%s", o.repo, status)
	}
	for _, m := range modules {
		out, _ := exec.Command("git", "-C", o.repo, "tag", "-l", tag(m, o.version)).Output()
		if len(bytes.TrimSpace(out)) > 0 {
			return fmt.Errorf("tag %s exists already", tag(m, o.version))
		}
	}
	changed, err := releaseGoMods(o.repo, o.version)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "release %s: %s require the modules at %s, without replace directives\n", o.version, strings.Join(changed, ", "), o.version)

	tmp, err := os.MkdirTemp("", "fusebox-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	proxy := filepath.Join(tmp, "proxy")
	cache, err := goEnv("GOMODCACHE")
	if err != nil {
		return err
	}
	// A module proxy of our own serving the modules at o.version,
	// consulted before the usual one (third-party modules come from the
	// module cache or it). No checksum database knows our modules at this
	// version yet.
	upstream, err := goEnv("GOPROXY")
	if err != nil {
		return err
	}
	env := []string{
		"GOWORK=off", "GOFLAGS=-mod=mod",
		"GOPROXY=file://" + filepath.ToSlash(proxy) + "," + upstream,
		"GONOSUMDB=github.com/fusebox-dev/fusebox",
	}
	// The module cache must not hold an older build of the same version
	// (an earlier try of this release): the go command would use it.
	clean := func() error { return removeFromCache(cache, o.version) }
	if err := clean(); err != nil {
		return err
	}
	defer clean()

	files, err := gitFiles(o.repo)
	if err != nil {
		return err
	}
	for _, m := range modules {
		// go.sum gets the checksums of the modules served so far (the
		// go command computes them from the zips it fetches).
		if m.dir != "fuse" {
			dir := filepath.Join(o.repo, filepath.FromSlash(m.dir))
			if _, err := goCmd(dir, env, "list", "-deps", "-test", "./..."); err != nil {
				return fmt.Errorf("the release form of %s does not load: %v", m.path, err)
			}
		}
		if err := writeModule(proxy, o.repo, files, m, o.version); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "go install %s@%s from a module proxy serving this tree ...\n", installPackage, o.version)
	bin := filepath.Join(tmp, "bin")
	got, err := installAndVersion(tmp, bin, env, o.version)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "%s version: %s\n", filepath.Join("$GOBIN", "fusebox"), got)

	cmds := gitCommands(o.version)
	if !o.tag {
		fmt.Fprintf(stdout, "# The release form of %s is in the working tree (go.mod and go.sum files). Commit and tag it off main\n# (main keeps the replace directives), then push the tags:\n", o.version)
		for _, c := range cmds {
			fmt.Fprintln(stdout, strings.Join(quoteAll(c), " "))
		}
		fmt.Fprintf(stdout, "git push origin %s\ngit switch -\n", strings.Join(tags(o.version), " "))
		return nil
	}
	for _, c := range cmds {
		fmt.Fprintf(log, "+ %s\n", strings.Join(quoteAll(c), " "))
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = o.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	if o.push != "" {
		args := append([]string{"push", o.push}, tags(o.version)...)
		fmt.Fprintf(log, "+ git %s\n", strings.Join(args, " "))
		cmd := exec.Command("git", args...)
		cmd.Dir = o.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	fmt.Fprintf(stdout, "tagged %s on branch release/%s; back to your branch: git switch -\n", strings.Join(tags(o.version), " "), o.version)
	return nil
}

// tags are the three tags of version.
func tags(version string) []string {
	var t []string
	for i := len(modules) - 1; i >= 0; i-- {
		t = append(t, tag(modules[i], version))
	}
	return t
}

// gitCommands commit the release form on branch release/VERSION and tag
// that commit for each module.
func gitCommands(version string) [][]string {
	cmds := [][]string{
		{"git", "switch", "-c", "release/" + version},
		{"git", "commit", "-a", "-m", "release " + version + ": go.mod files require fuse and fuse/kafkago " + version + ", no replace directives"},
	}
	for _, t := range tags(version) {
		cmds = append(cmds, []string{"git", "tag", "-a", t, "-m", "fusebox " + version})
	}
	return cmds
}

// installAndVersion runs `go install installPackage@version` with GOBIN=bin
// (from dir, outside any module) and the installed `fusebox version`, and
// returns its first line's version, failing unless it is version.
func installAndVersion(dir, bin string, env []string, version string) (string, error) {
	if _, err := goCmd(dir, append(env, "GOBIN="+bin), "install", installPackage+"@"+version); err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(bin, "fusebox"), "version").Output()
	if err != nil {
		return "", fmt.Errorf("fusebox version: %v", cmdErr(err))
	}
	first, _, _ := strings.Cut(string(out), "\n")
	got := strings.TrimPrefix(first, "fusebox ")
	if got != version {
		return got, fmt.Errorf("the installed fusebox says %q, want \"fusebox %s\":\n%s", first, version, out)
	}
	return got, nil
}

// removeFromCache deletes our modules at version from the module cache
// (the extracted directories and the download cache), which the go
// command writes read-only.
func removeFromCache(cache, version string) error {
	for _, m := range modules {
		esc := filepath.FromSlash(escapePath(m.path))
		paths := []string{filepath.Join(cache, esc+"@"+version)}
		dl, _ := filepath.Glob(filepath.Join(cache, "cache", "download", esc, "@v", version+".*"))
		for _, p := range append(paths, dl...) {
			_ = filepath.WalkDir(p, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					_ = os.Chmod(p, 0o755)
				}
				return nil
			})
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("removing %s from the module cache: %v", p, err)
			}
		}
	}
	return nil
}

// goCmd runs the go command in dir with env added, returning its stdout;
// the error carries its output.
func goCmd(dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// goEnv is `go env NAME`.
func goEnv(name string) (string, error) {
	out, err := goCmd(".", nil, "env", name)
	return strings.TrimSpace(string(out)), err
}

// quoteAll quotes the arguments that need it for a shell.
func quoteAll(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \"'$`\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return q
}
