package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/internal/config"
)

// run dispatches `fusebox <command> [flags]` and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if name == "help" && len(rest) > 0 && rest[0] != "help" {
			// `fusebox help broker` is `fusebox broker -h`; `fusebox help
			// config check` is `fusebox config check -h`.
			if c, ok := lookup(rest[0]); ok {
				return c.run(ctx, append(slices.Clone(rest[1:]), "-h"), stdout, stderr)
			}
			return unknownCommand(stderr, rest[0])
		}
		usage(stdout)
		return exitOK
	case "-version", "--version", "-V":
		return cmdVersion(ctx, rest, stdout, stderr)
	}
	c, ok := lookup(name)
	if !ok {
		return unknownCommand(stderr, name)
	}
	return c.run(ctx, rest, stdout, stderr)
}

// unknownCommand reports a command name that is none of commands on one
// line, with the nearest one when it looks like a typo.
func unknownCommand(stderr io.Writer, name string) int {
	msg := fmt.Sprintf("fusebox: unknown command %q", name)
	if strings.HasPrefix(name, "-") {
		msg = fmt.Sprintf("fusebox: unknown flag %s (flags come after the command: fusebox <command> [flags])", name)
	} else {
		best, bestD := "", -1
		for _, c := range commands {
			if d := config.EditDistance(name, c.name); bestD < 0 || d < bestD {
				best, bestD = c.name, d
			}
		}
		if bestD >= 0 && bestD <= max(1, len(name)/3) {
			msg += fmt.Sprintf(" (did you mean %s?)", best)
		}
	}
	fmt.Fprintln(stderr, msg+"; see fusebox help")
	return exitUsage
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func usage(w io.Writer) {
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	var b strings.Builder
	b.WriteString("fusebox keeps LLM serving inside its SLOs: it reads OpenTelemetry spans and user corrections\n")
	b.WriteString("from Kafka and writes verdicts and fuse commands to Kafka and ClickHouse.\n\n")
	b.WriteString("Usage:\n\n\tfusebox <command> [flags]\n\nCommands:\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "\t%-*s  %s\n", width, c.name, c.summary)
	}
	b.WriteString("\nRun `fusebox help <command>` (or `fusebox <command> -h`) for its flags;\n`fusebox --version` for the version.\n")
	io.WriteString(w, b.String())
}
