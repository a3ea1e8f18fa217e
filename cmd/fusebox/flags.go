package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlagSet returns a FlagSet for a command that reports errors instead of
// exiting and writes its usage to stderr: "Usage: fusebox NAME ARGS", the
// description, then the flags.
func newFlagSet(name, args, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fusebox "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fusebox %s %s\n\n%s\n\nFlags:\n", name, args, description)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and returns (exit code, done): done is true when
// the command should return the code now (-h, or a bad flag, already
// reported by the FlagSet). Positional arguments are a usage error.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, true
		}
		return exitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return exitUsage, true
	}
	return exitOK, false
}
