package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/fusebox-dev/fusebox/internal/observe"
)

func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "", "Prints the release version, the module, the Go version and the commit: stamped at build time\n(-ldflags -X, as the Dockerfile does from its VERSION and REVISION build arguments), else from\nthe build info (the module version of `go install ...@VERSION`, the git checkout's commit).", stdout)
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintf(stdout, "fusebox %s\n", observe.Version())
	if ok {
		fmt.Fprintf(stdout, "module  %s\n", bi.Main.Path)
	}
	fmt.Fprintf(stdout, "go      %s\n", runtime.Version())
	if rev := observe.Revision(); rev != "unknown" {
		fmt.Fprintf(stdout, "commit  %s\n", rev)
	}
	if ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.time" && s.Value != "" {
				fmt.Fprintf(stdout, "time    %s\n", s.Value)
			}
		}
	}
	fmt.Fprintf(stdout, "os/arch %s/%s\n", runtime.GOOS, runtime.GOARCH)
	return exitOK
}
