package main

import (
	"context"
	"fmt"
	"io"
	"strings"
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
		if name == "help" && len(rest) > 0 {
			// `fusebox help broker` is `fusebox broker -h`.
			if c, ok := lookup(rest[0]); ok {
				return c.run(ctx, []string{"-h"}, stdout, stderr)
			}
			fmt.Fprintf(stderr, "fusebox: unknown command %q\n\n", rest[0])
			usage(stderr)
			return exitUsage
		}
		usage(stdout)
		return exitOK
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "fusebox: unknown command %q\n\n", name)
		usage(stderr)
		return exitUsage
	}
	return c.run(ctx, rest, stdout, stderr)
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
	b.WriteString("\nRun `fusebox help <command>` (or `fusebox <command> -h`) for its flags.\n")
	io.WriteString(w, b.String())
}
