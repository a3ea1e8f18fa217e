// Command release makes the release form of the fusebox repository for
// a version and checks that `go install
// github.com/fusebox-dev/fusebox/cmd/fusebox@VERSION` works from it
// (docs/running.md, "Building and versions"). Run it as scripts/release:
//
//	scripts/release [-tag] [-push REMOTE] VERSION
//
// In a clean checkout it rewrites go.mod (and fuse/kafkago/go.mod) to
// require github.com/fusebox-dev/fusebox/fuse and .../fuse/kafkago at
// VERSION without the replace directives main keeps, adds their
// checksums to go.sum, serves the three modules at VERSION from a module
// proxy in a temporary directory, installs fusebox from it as a user
// would and checks that `fusebox version` says VERSION. Then it prints the
// git commands that commit the release form on branch release/VERSION and
// tag it VERSION, fuse/VERSION and fuse/kafkago/VERSION. It tags only with
// -tag and pushes only with -push. Exit status 1 on any failure, 2 on a
// bad command line.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: scripts/release [-repo DIR] [-tag] [-push REMOTE] VERSION   (VERSION: vX.Y.Z)")
		fs.PrintDefaults()
	}
	var o options
	fs.StringVar(&o.repo, "repo", ".", "the repository `dir`ectory (a clean checkout)")
	fs.BoolVar(&o.tag, "tag", false, "commit the release form on branch release/VERSION and create the three tags (locally)")
	fs.StringVar(&o.push, "push", "", "push the three tags to `remote` (needs -tag)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	o.version = fs.Arg(0)
	if err := checkVersion(o.version); err != nil {
		fmt.Fprintln(stderr, "release:", err)
		return 2
	}
	if err := release(o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "release:", err)
		return 1
	}
	return 0
}
