package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "", "Prints the module version, the Go version and, when built from a git checkout, the commit.", stdout)
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintf(stdout, "fusebox (unknown version)\ngo      %s\n", runtime.Version())
		return exitOK
	}
	fmt.Fprintf(stdout, "fusebox %s\nmodule  %s\ngo      %s\n", bi.Main.Version, bi.Main.Path, bi.GoVersion)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += " (modified)"
		}
		fmt.Fprintf(stdout, "commit  %s\n", rev)
	}
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(stdout, "time    %s\n", t)
	}
	fmt.Fprintf(stdout, "os/arch %s/%s\n", runtime.GOOS, runtime.GOARCH)
	return exitOK
}
