package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/product"
	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/schemas"
)

const configDescription = `Works with SLO files. Subcommands:

  check FILE   load FILE as "fusebox run --config FILE" would and build its
               processors and breaker; print "ok" and one line per SLO, or
               every problem as FILE:LINE: FIELD: REASON. Exit 1 on errors.
               It does not connect to Kafka or ClickHouse. It reads the
               signing keys as run would (--fuse-keys FILE, signing.keys_file,
               $signing.keys_env) when there are any: an active key past its
               not-after is an error, one expiring within
               signing.expiry_warning a warning, a malformed entry an error
               naming it.
  diff OLD NEW what restarting a deployment that ran OLD with NEW keeps and
               resets: per SLO kept (what its windows hold is unchanged:
               only budgets, alpha, limits, factors, ... changed), reset
               (its windows changed shape: metric, window, every, match,
               caps; it restarts empty), added, removed (state dropped);
               the breaker kept or reset (its target dimensions changed);
               and whether verdict ids change (they include the config
               version). The same words the keyed stage logs at start.`

// cmdConfig dispatches `fusebox config SUBCOMMAND`.
func cmdConfig(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config", "check FILE | diff OLD NEW", configDescription, stdout)
	if len(args) == 0 {
		return usageError(fs, stderr, "name a subcommand: check FILE, diff OLD NEW")
	}
	switch args[0] {
	case "check":
		return cmdConfigCheck(ctx, args[1:], stdout, stderr)
	case "diff":
		return cmdConfigDiff(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fs.Usage()
		return exitOK
	}
	if strings.HasPrefix(args[0], "-") {
		return usageError(fs, stderr, "unknown flag %s: name a subcommand first: check FILE, diff OLD NEW", args[0])
	}
	return usageError(fs, stderr, "unknown subcommand %q (subcommands: check, diff)", args[0])
}

func cmdConfigCheck(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config check", "FILE [--fuse-keys KEYS]", "Loads and checks the SLO file FILE; see `fusebox config -h`.", stdout)
	keysFile := fs.String("fuse-keys", "", "`file` of fuse signing keys to check, as run --fuse-keys")
	// FILE may come before or after the flags.
	if code, done := parseArgs(fs, args, stderr); done {
		return code
	}
	path := fs.Arg(0)
	if fs.NArg() > 1 {
		if code, done := parseArgs(fs, fs.Args()[1:], stderr); done {
			return code
		}
	} else if fs.NArg() == 1 {
		fs.Parse(nil) //nolint:errcheck // nothing to parse: empties Args
	}
	if path == "" || fs.NArg() != 0 {
		return usageError(fs, stderr, "give exactly one FILE")
	}
	f, err := config.Load(path)
	if err != nil {
		printConfigErrors(stderr, "fusebox config check", path, err)
		return exitFailure
	}
	if _, err := config.WorkerConfig(f); err != nil {
		fmt.Fprintf(stderr, "fusebox config check: %s: %v\n", path, err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "ok: %s: config version %s, %d SLO(s), sinks %s\n", path, f.Version, len(f.SLOs), sinkNames(f))
	for _, s := range f.SLOs {
		fmt.Fprintf(stdout, "  slo %s: %s%s\n", s.Name, sloSummary(&s), matchSummary(s.Match))
	}
	fmt.Fprintf(stdout, "  breaker: %s\n", breakerSummary(&f.Breaker))
	ring, src, err := loadKeyring(f.Signing, *keysFile)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "fusebox config check: %s: %v\n", path, err)
		return exitFailure
	case ring == nil && f.Signing.InsecureUnsigned:
		fmt.Fprintln(stdout, "  signing: none: commands are published UNSIGNED (signing.insecure_unsigned)")
	case ring == nil:
		fmt.Fprintln(stdout, "  signing: no key found here; run refuses to start without one (signing.keys_file, --fuse-keys or $"+f.Signing.KeysEnv+")")
	default:
		warn, err := product.CheckSigningKey(ring, src, time.Now(), f.Signing.ExpiryWarning)
		if err != nil {
			fmt.Fprintf(stderr, "fusebox config check: %s: %v\n", path, err)
			return exitFailure
		}
		k, _ := ring.Key(ring.Active())
		until := "no not-after"
		if !k.NotAfter().IsZero() {
			until = "not-after " + k.NotAfter().UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "  signing: key %s from %s (%s; keys %s)\n", ring.Active(), src, until, strings.Join(ring.IDs(), ","))
		if warn != "" {
			fmt.Fprintf(stdout, "  warning: %s\n", warn)
			fmt.Fprintf(stderr, "fusebox config check: warning: %s\n", warn)
		}
	}
	return exitOK
}

func cmdConfigDiff(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config diff", "OLD NEW", "Says what a restart with NEW keeps of state written under OLD; see `fusebox config -h`.", stdout)
	if code, done := parseArgs(fs, args, stderr); done {
		return code
	}
	if fs.NArg() != 2 {
		return usageError(fs, stderr, "give OLD and NEW")
	}
	var files [2]*config.File
	for i, path := range fs.Args() {
		f, err := config.Load(path)
		if err != nil {
			printConfigErrors(stderr, "fusebox config diff", path, err)
			return exitFailure
		}
		files[i] = f
	}
	rep, err := config.PlanEdit(files[0], files[1])
	if err != nil {
		fmt.Fprintf(stderr, "fusebox config diff: %v\n", err)
		return exitFailure
	}
	old, cur := files[0], files[1]
	fmt.Fprintf(stdout, "config version %s -> %s", old.Version, cur.Version)
	if old.Version != cur.Version {
		fmt.Fprintln(stdout, ": every verdict id changes (ids hash the config version); a replay across the edit writes new ids")
	} else {
		fmt.Fprintln(stdout, ": verdict ids unchanged")
	}
	if old.Deployment() != cur.Deployment() || old.Topics.State != cur.Topics.State {
		fmt.Fprintf(stdout, "deployment %s (keyed %s, state %s) -> %s (keyed %s, state %s): NO state is carried over: the new deployment reads other checkpoints\n",
			old.Deployment(), old.Topics.Keyed, old.Topics.State, cur.Deployment(), cur.Topics.Keyed, cur.Topics.State)
	}
	for _, c := range rep.SLOs {
		fmt.Fprintf(stdout, "  slo %s: %s\n", c.SLO, c.Change)
	}
	if rep.Breaker != "" {
		fmt.Fprintf(stdout, "  breaker: %s\n", rep.Breaker)
	}
	fmt.Fprintf(stdout, "kept: %s\nreset: %s\nadded: %s\nremoved: %s\n",
		orNone(rep.Names(engine.Kept)), orNone(rep.Names(engine.Reset)), orNone(rep.Names(engine.Added)), orNone(rep.Names(engine.Removed)))
	return exitOK
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sloSummary says in one line what an SLO checks.
func sloSummary(s *config.SLO) string {
	if sec, ok := s.Processor(); ok {
		return sec.Config.Summary()
	}
	return "no processor"
}

func matchSummary(m schemas.Match) string {
	var parts []string
	for _, d := range []struct {
		name string
		vals []string
	}{{"tenant", m.Tenant}, {"service", m.Service}, {"model", m.Model}, {"variant", m.Variant}} {
		if len(d.vals) > 0 {
			parts = append(parts, d.name+" in ["+strings.Join(d.vals, " ")+"]")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; only " + strings.Join(parts, ", ")
}

func breakerSummary(b *config.Breaker) string {
	var rules []string
	for _, r := range b.Rules {
		s := r.Processor
		if r.SLO != "" {
			s += "/" + r.SLO
		}
		if r.Metric != "" {
			s += "/" + r.Metric
		}
		s += "→" + string(r.Action)
		if r.Fallback != "" {
			s += "(" + r.Fallback + ")"
		}
		if r.ThrottleFraction > 0 {
			s += "(" + strconv.FormatFloat(r.ThrottleFraction, 'g', -1, 64) + ")"
		}
		rules = append(rules, s)
	}
	if len(rules) == 0 {
		rules = []string{"none (no commands are ever issued)"}
	}
	return fmt.Sprintf("trip on %d of the last %d evaluations, target [%s], cool-down %v (x%g up to %v), close after %d ok; rules %s",
		b.K, b.N, strings.Join(b.Target, " "), b.CoolDown, b.BackoffFactor, b.MaxCoolDown, b.CloseAfter, strings.Join(rules, ", "))
}
