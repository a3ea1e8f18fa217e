package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReleaseInstalls proves that the release form installs as users
// install fusebox: on a copy of this working tree (its tracked and
// untracked, not ignored files, committed to a fresh git repository),
//
//  1. main's go.mod as is, served by a file module proxy at a version, is
//     refused by `go install github.com/fusebox-dev/fusebox/cmd/fusebox@V`
//     with Go's replace-directive message;
//  2. scripts/release -tag -push origin VTEST makes the release form,
//     checks its own install, commits it on release/VTEST, tags VTEST,
//     fuse/VTEST, fuse/kafkago/VTEST and pushes them to a bare repository;
//     main keeps its replace directives;
//  3. the tagged tree, served by a file module proxy this test builds
//     (module zips of every module at VTEST, the third-party modules from
//     the usual module cache and GOPROXY), installs with `go install
//     ...@VTEST` into a temporary GOBIN, and the installed `fusebox
//     version` prints VTEST, from the build info go install stamps;
//  4. the go command makes the same module zips from the git tags
//     (GOPROXY=direct, as proxy.golang.org does) as this test's proxy
//     serves: same checksums, and go.sum at the tag has the fuse modules'.
//
// The versions are unique per run (v0.0.1-releasetest.<time>.<pid>) and
// are removed from the module cache afterwards: a cached copy of an older
// run would be used in place of this tree. It compiles fusebox (about 1–2
// min), so scripts/test runs it as its part "release", not inside
// `go test ./...` (docs/testing.md).
func TestReleaseInstalls(t *testing.T) {
	repo := copyRepo(t)
	tmp := t.TempDir()
	cache, err := goEnv("GOMODCACHE")
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := goEnv("GOPROXY")
	if err != nil {
		t.Fatal(err)
	}
	stamp := fmt.Sprintf("%d.%d", time.Now().Unix(), os.Getpid())
	mainVersion := "v0.0.1-releasetest.main." + stamp
	version := "v0.0.1-releasetest." + stamp
	for _, v := range []string{mainVersion, version} {
		t.Cleanup(func() {
			if err := removeFromCache(cache, v); err != nil {
				t.Error(err)
			}
		})
	}
	env := func(proxy string) []string {
		return []string{
			"GOWORK=off", "GOFLAGS=-mod=mod",
			"GOPROXY=file://" + filepath.ToSlash(proxy) + "," + upstream,
			"GONOSUMDB=github.com/fusebox-dev/fusebox",
		}
	}
	serve := func(proxy, version string) {
		t.Helper()
		files, err := gitFiles(repo)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range modules {
			if err := writeModule(proxy, repo, files, m, version); err != nil {
				t.Fatal(err)
			}
		}
	}

	// 1. main's form is refused.
	mainProxy := filepath.Join(tmp, "proxy-main")
	serve(mainProxy, mainVersion)
	_, err = installAndVersion(tmp, filepath.Join(tmp, "bin-main"), env(mainProxy), mainVersion)
	if err == nil || !strings.Contains(err.Error(), "contains one or") || !strings.Contains(err.Error(), "replace directives") {
		t.Fatalf("go install ...@%s of main's go.mod (with its replace directives): %v; want Go's refusal naming the replace directives", mainVersion, err)
	}
	t.Logf("main's go.mod, as Go says: %v", err)

	// 2. The release step.
	remote := filepath.Join(tmp, "remote.git")
	git(t, tmp, "init", "-q", "--bare", remote)
	git(t, repo, "remote", "add", "origin", remote)
	start := time.Now()
	cmd := exec.Command(filepath.Join(repo, "scripts", "release"), "-tag", "-push", "origin", version)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), gitIdentity...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/release -tag -push origin %s: %v\n%s", version, err, out)
	}
	t.Logf("scripts/release -tag -push origin %s (%v):\n%s", version, time.Since(start).Round(time.Second), out)
	wantTags := []string{version, "fuse/" + version, "fuse/kafkago/" + version}
	for _, tg := range wantTags {
		if got := git(t, repo, "rev-parse", tg+"^{commit}"); got != git(t, repo, "rev-parse", "release/"+version) {
			t.Errorf("tag %s is at %s, want the release commit", tg, got)
		}
		if got := git(t, repo, "ls-remote", "--tags", "origin", tg); got == "" {
			t.Errorf("tag %s was not pushed to origin", tg)
		}
	}
	for _, f := range []string{"go.mod", "fuse/kafkago/go.mod"} {
		rel := git(t, repo, "show", version+":"+f)
		if strings.Contains(rel, "replace") {
			t.Errorf("%s at tag %s still has a replace directive:\n%s", f, version, rel)
		}
		if !strings.Contains(rel, "github.com/fusebox-dev/fusebox/fuse "+version+"\n") {
			t.Errorf("%s at tag %s does not require github.com/fusebox-dev/fusebox/fuse %s:\n%s", f, version, version, rel)
		}
		if main := git(t, repo, "show", "main:"+f); !strings.Contains(main, "replace") {
			t.Errorf("%s on main lost its replace directive:\n%s", f, main)
		}
	}
	if rel := git(t, repo, "show", version+":go.mod"); !strings.Contains(rel, "github.com/fusebox-dev/fusebox/fuse/kafkago "+version+"\n") {
		t.Errorf("go.mod at tag %s does not require fuse/kafkago %s:\n%s", version, version, rel)
	}

	// 3. The tagged tree installs, and the binary says its version.
	if status := git(t, repo, "status", "--porcelain"); status != "" {
		t.Fatalf("the working tree differs from the tag %s:\n%s", version, status)
	}
	if err := removeFromCache(cache, version); err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(tmp, "proxy")
	serve(proxy, version)
	bin := filepath.Join(tmp, "bin")
	start = time.Now()
	if _, err := goCmd(tmp, append(env(proxy), "GOBIN="+bin), "install", installPackage+"@"+version); err != nil {
		t.Fatal(err)
	}
	t.Logf("go install %s@%s: %v", installPackage, version, time.Since(start).Round(time.Second))
	got, err := exec.Command(filepath.Join(bin, "fusebox"), "version").Output()
	if err != nil {
		t.Fatalf("fusebox version: %v", cmdErr(err))
	}
	first, _, _ := strings.Cut(string(got), "\n")
	if first != "fusebox "+version || !strings.Contains(string(got), "module  github.com/fusebox-dev/fusebox\n") {
		t.Fatalf("fusebox version printed:\n%s\nwant first line %q and module github.com/fusebox-dev/fusebox", got, "fusebox "+version)
	}
	t.Logf("fusebox version:\n%s", got)

	// 4. The zips are the go command's own: fetched from the tags in git
	// (GOPROXY=direct, github.com rewritten to the copy), as
	// proxy.golang.org will, each module has the checksum of this test's
	// proxy, which go.sum at the tag records for the fuse modules.
	gitConfig := filepath.Join(tmp, "gitconfig")
	if err := os.WriteFile(gitConfig, []byte("[url \"file://"+filepath.ToSlash(repo)+"\"]\n\tinsteadOf = https://github.com/fusebox-dev/fusebox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sums := git(t, repo, "show", version+":go.sum")
	for _, m := range modules {
		fromGit := downloadSum(t, tmp, m.path+"@"+version, "GOPROXY=direct", "GOSUMDB=off", "GIT_CONFIG_GLOBAL="+gitConfig,
			"GOMODCACHE="+filepath.Join(tmp, "modcache-git"))
		fromProxy := downloadSum(t, tmp, m.path+"@"+version, "GOPROXY=file://"+filepath.ToSlash(proxy), "GOSUMDB=off",
			"GOMODCACHE="+filepath.Join(tmp, "modcache-proxy"))
		if fromGit != fromProxy {
			t.Errorf("%s@%s: checksum %s from the git tag, %s from this test's module proxy", m.path, version, fromGit, fromProxy)
		}
		if m.dir != "" && !strings.Contains(sums, m.path+" "+version+" "+fromGit+"\n") {
			t.Errorf("go.sum at tag %s lacks %s %s %s", version, m.path, version, fromGit)
		}
	}
}

// downloadSum is the checksum (h1:) of the module zip `go mod download`
// fetches for modVersion with env, in a module cache of its own (removed
// with the test's temporary directory).
func downloadSum(t *testing.T, dir, modVersion string, env ...string) string {
	t.Helper()
	out, err := goCmd(dir, append(env, "GOWORK=off", "GOFLAGS=-modcacherw"), "mod", "download", "-json", modVersion)
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Sum string }
	if err := json.Unmarshal(out, &d); err != nil || d.Sum == "" {
		t.Fatalf("go mod download -json %s: %v\n%s", modVersion, err, out)
	}
	return d.Sum
}

// TestReleaseRefuses checks the refusals that come before any build: a
// dirty tree, -push without -tag, a bad version, a tag that exists.
func TestReleaseRefuses(t *testing.T) {
	repo := copyRepo(t)
	// In this order: the last one leaves the tree dirty.
	for _, c := range []struct {
		name string
		o    options
		prep func()
		want string
	}{
		{name: "bad version", o: options{version: "v1.2"}, want: "not a semantic version"},
		{name: "push alone", o: options{version: "v1.2.3", push: "origin"}, want: "-push needs -tag"},
		{name: "tag exists", o: options{version: "v1.2.4"}, prep: func() { git(t, repo, "tag", "fuse/v1.2.4") },
			want: "tag fuse/v1.2.4 exists already"},
		{name: "dirty", o: options{version: "v1.2.5"}, prep: func() {
			if err := os.WriteFile(filepath.Join(repo, "stray.txt"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, want: "untracked files"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.prep != nil {
				c.prep()
			}
			c.o.repo = repo
			err := release(c.o, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("release(%+v) = %v, want an error saying %q", c.o, err, c.want)
			}
		})
	}
	if diff := git(t, repo, "diff", "--stat"); diff != "" {
		t.Errorf("a refused release changed the tree:\n%s", diff)
	}
}

// copyRepo copies the repository's working tree (tracked and untracked
// files that git does not ignore, as they are on disk) into a new git
// repository with one commit on branch main, and returns its directory.
func copyRepo(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", cmdErr(err))
	}
	dst := filepath.Join(t.TempDir(), "fusebox")
	for _, p := range strings.Split(string(out), "\x00") {
		if p == "" {
			continue
		}
		src := filepath.Join(root, filepath.FromSlash(p))
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		} else if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			link, err := os.Readlink(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(link, to); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dst, "init", "-q", "-b", "main")
	git(t, dst, "add", "-A")
	git(t, dst, "commit", "-q", "-m", "the working tree under test")
	return dst
}

// gitIdentity lets git commit and tag on a machine without a git identity.
var gitIdentity = []string{
	"GIT_AUTHOR_NAME=release test", "GIT_AUTHOR_EMAIL=release@test.invalid",
	"GIT_COMMITTER_NAME=release test", "GIT_COMMITTER_EMAIL=release@test.invalid",
}

// git runs git in dir with a fixed identity and returns its trimmed
// stdout, failing the test on an error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitIdentity...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return strings.TrimSpace(stdout.String())
}
