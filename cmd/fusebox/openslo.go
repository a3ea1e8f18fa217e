package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/openslo"
)

const opensloDescription = `Converts between the SLO file and OpenSLO (apiVersion openslo/v1; see
docs/openslo.md for what maps to what). Subcommands:

  export FILE      write the SLOs of the SLO file FILE as OpenSLO v1
                   documents: per SLO an SLO and its SLI, for burn-rate SLOs
                   an AlertPolicy and an AlertCondition per page and ticket
                   rule. What OpenSLO has no field for (alpha, windows,
                   caps, the key match) is kept as fusebox.dev/ annotations,
                   so that import gives the same SLOs back.
  import FILE...   read OpenSLO v1 (and v1alpha, the form Sloth reads)
                   documents and write a fusebox SLO file (its slos:
                   section). Every field that does not map is named as
                   FILE:LINE: document N (KIND NAME): FIELD: REASON on
                   stderr; descriptive ones (displayName, labels,
                   notification targets) as notes. Exit 1, writing
                   nothing, when any field is refused, unless
                   --allow-partial: it writes the SLOs that mapped, each
                   refused field at its fusebox default, leaving out (and
                   naming) each SLO that config check would then refuse,
                   so that the file it writes always loads.`

// cmdOpenSLO dispatches `fusebox openslo SUBCOMMAND`.
func cmdOpenSLO(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("openslo", "export FILE | import FILE...", opensloDescription, stdout)
	if len(args) == 0 {
		return usageError(fs, stderr, "name a subcommand: export FILE, import FILE...")
	}
	switch args[0] {
	case "export":
		return cmdOpenSLOExport(ctx, args[1:], stdout, stderr)
	case "import":
		return cmdOpenSLOImport(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fs.Usage()
		return exitOK
	}
	if strings.HasPrefix(args[0], "-") {
		return usageError(fs, stderr, "unknown flag %s: name a subcommand first: export FILE, import FILE...", args[0])
	}
	return usageError(fs, stderr, "unknown subcommand %q (subcommands: export, import)", args[0])
}

// positional parses args, flags anywhere among the positional arguments,
// and returns the positional ones.
func positional(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, int, bool) {
	var pos []string
	for {
		if code, done := parseArgs(fs, args, stderr); done {
			return nil, code, true
		}
		if fs.NArg() == 0 {
			return pos, exitOK, false
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// writeOut writes b to path, or to stdout when path is "" or "-".
func writeOut(path string, b []byte, stdout io.Writer) error {
	if path == "" || path == "-" {
		_, err := stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func cmdOpenSLOExport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("openslo export", "FILE [--out FILE]", "Writes the SLOs of the SLO file FILE as OpenSLO v1 documents; see `fusebox openslo -h`.", stdout)
	out := fs.String("out", "", "`file` to write the OpenSLO documents to (default: stdout)")
	pos, code, done := positional(fs, args, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "give exactly one FILE")
	}
	f, err := config.Load(pos[0])
	if err != nil {
		printConfigErrors(stderr, "fusebox openslo export", pos[0], err)
		return exitFailure
	}
	b, err := openslo.Export(f)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox openslo export: %s: %v\n", pos[0], err)
		return exitFailure
	}
	if err := writeOut(*out, b, stdout); err != nil {
		fmt.Fprintf(stderr, "fusebox openslo export: %v\n", err)
		return exitFailure
	}
	return exitOK
}

func cmdOpenSLOImport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("openslo import", "FILE... [--out FILE] [--allow-partial]", "Reads OpenSLO documents into a fusebox SLO file; see `fusebox openslo -h`.", stdout)
	out := fs.String("out", "", "`file` to write the fusebox SLO file to (default: stdout)")
	partial := fs.Bool("allow-partial", false, "write the SLOs even when fields are refused: each refused field keeps the fusebox default, an SLO that config check then refuses is left out (the refusals are still listed)")
	pos, code, done := positional(fs, args, stderr)
	if done {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, stderr, "give one or more FILEs")
	}
	var in []openslo.Input
	for _, p := range pos {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintf(stderr, "fusebox openslo import: %v\n", err)
			return exitFailure
		}
		in = append(in, openslo.Input{Name: p, Data: b})
	}
	res, err := openslo.Importer{}.Import(in)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox openslo import: %v\n", err)
		return exitFailure
	}
	for _, p := range res.Problems {
		fmt.Fprintf(stderr, "fusebox openslo import: %v\n", p)
	}
	for _, s := range res.LeftOut {
		fmt.Fprintf(stderr, "fusebox openslo import: %s: left out of the written file: fusebox config check refuses it (above)\n", s)
	}
	refused := len(res.Problems.Refused())
	switch {
	case refused > 0 && !*partial:
		fmt.Fprintf(stderr, "fusebox openslo import: %d field(s) refused, nothing written (--allow-partial writes the %d SLO(s) that mapped)\n", refused, res.SLOs)
		return exitFailure
	case res.SLOs == 0:
		fmt.Fprintln(stderr, "fusebox openslo import: no SLO in the files")
		return exitFailure
	}
	if err := writeOut(*out, res.File, stdout); err != nil {
		fmt.Fprintf(stderr, "fusebox openslo import: %v\n", err)
		return exitFailure
	}
	if refused > 0 {
		fmt.Fprintf(stderr, "fusebox openslo import: %d SLO(s) written with %d refused field(s) left at fusebox defaults, %d SLO(s) left out (--allow-partial)\n", res.SLOs, refused, len(res.LeftOut))
	}
	return exitOK
}
