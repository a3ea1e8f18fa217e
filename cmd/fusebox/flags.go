package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/fusebox-dev/fusebox/internal/config"
)

// The command-line conventions of every command (docs/cli.md):
//   - -h, -help and --help print the command's usage to stdout and exit 0;
//   - a bad command line prints ONE line to stderr, naming the problem and
//     "see fusebox CMD -h", and exits 2 (exitUsage): no usage dump that
//     scrolls the problem away;
//   - flags are spelt --flag in help and messages (Go's flag package
//     accepts -flag and --flag alike).

// newFlagSet returns a FlagSet for command name ("run", "config check")
// whose usage — "Usage: fusebox NAME ARGS", the description, then the
// flags spelt --flag — goes to stdout. Parse it with parseFlags (or
// parseArgs): they turn a bad flag into one line on stderr.
func newFlagSet(name, args, description string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fusebox "+name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: fusebox %s %s\n\n%s\n", name, args, description)
		if hasFlags(fs) {
			io.WriteString(w, "\nFlags:\n")
			printDefaults(w, fs)
		}
	}
	return fs
}

// parseFlags parses args and returns (exit code, done): done is true when
// the command should return the code now (-h: usage on stdout, exit 0; a
// bad flag or a positional argument: one line on stderr, exit 2).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if code, done := parseArgs(fs, args, stderr); done {
		return code, true
	}
	if fs.NArg() > 0 {
		return usageError(fs, stderr, "unexpected argument %q", fs.Arg(0)), true
	}
	return exitOK, false
}

// parseArgs is parseFlags for commands that take positional arguments:
// they are left in fs.Args().
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	out := fs.Output()
	fs.SetOutput(io.Discard) // the flag package's own message and usage dump
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return exitOK, true
	}
	return usageError(fs, stderr, "%s", flagError(fs, err)), true
}

// usageError prints "fusebox CMD: MESSAGE; see fusebox CMD -h" on one line
// and returns exitUsage.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s; see %s -h\n", fs.Name(), fmt.Sprintf(format, args...), fs.Name())
	return exitUsage
}

// flagError rewrites the flag package's error in the --flag spelling and,
// for an unknown flag, suggests the nearest defined one.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag --" + name
		if s := suggestFlag(fs, name); s != "" {
			msg += " (did you mean --" + s + "?)"
		}
		return msg
	}
	for _, p := range []string{"for flag -", "needs an argument: -", "bad flag syntax: -"} {
		if i := strings.Index(msg, p); i >= 0 {
			j := i + len(p)
			for j < len(msg) && msg[j] == '-' {
				j++
			}
			return msg[:i] + p + "-" + msg[j:]
		}
	}
	return msg
}

// suggestFlag returns the defined flag nearest to name: the one of least
// edit distance, if that distance is at most 2 (or a third of the name's
// length, for long names), or the only flag name starts with; else "".
func suggestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", -1
	var prefixed []string
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, name) {
			prefixed = append(prefixed, f.Name)
		}
		d := config.EditDistance(name, f.Name)
		if bestD < 0 || d < bestD {
			best, bestD = f.Name, d
		}
	})
	if bestD >= 0 && bestD <= max(2, len(name)/3) {
		return best
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// printDefaults is flag.PrintDefaults with the --flag spelling.
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(&b, "  --%s", f.Name)
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			b.WriteString(" " + name)
		}
		b.WriteString("\n    \t")
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		if !isZeroValue(f) {
			if reflect.TypeOf(f.Value).String() == "*flag.stringValue" {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %v)", f.DefValue)
			}
		}
		b.WriteString("\n")
	})
	io.WriteString(w, b.String())
}

// isZeroValue reports whether f's default is its type's zero value, which
// help does not print (as flag.PrintDefaults).
func isZeroValue(f *flag.Flag) bool {
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	if v, ok := z.Interface().(flag.Value); ok {
		defer func() { _ = recover() }() // a Value whose String needs fields set
		return f.DefValue == v.String()
	}
	return f.DefValue == ""
}
