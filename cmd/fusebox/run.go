package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/product"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/observe"
)

const runDescription = `Runs the pipeline daemon with the SLO file FILE (see examples/fusebox.yaml;
check it first with "fusebox config check FILE"); without --config, the file
$FUSEBOX_CONFIG names. It reads OTLP spans and
correction events from Kafka, writes verdicts and signed fuse commands to
Kafka, ClickHouse and/or a JSONL file, and serves /metrics, /healthz and
/readyz on http.listen (pprof too with http.pprof; the live page on /ui/
with http.ui). Logs are JSON lines on
stderr, at log.level.

Fuse commands are signed with the HMAC keys of --fuse-keys FILE, else
signing.keys_file, else the environment variable signing.keys_env (default
FUSEBOX_FUSE_KEYS), in the format "id:secret" (see package fuse). Without a
key fusebox refuses to start, unless --insecure-unsigned (or
signing.insecure_unsigned) allows unsigned commands.

Four settings can be given outside the file, for one deployment's file run
in several places: a flag wins over its environment variable, which wins
over the file:
  --brokers     $FUSEBOX_BROKERS     kafka.brokers (comma-separated host:port)
  --clickhouse  $FUSEBOX_CLICKHOUSE  sinks.clickhouse.addr (comma-separated host:port; turns the sink on)
  --listen      $FUSEBOX_LISTEN      http.listen ("" turns the HTTP listener off)
  --log-level   $FUSEBOX_LOG_LEVEL   log.level (debug, info, warn, error)

SIGTERM or SIGINT shuts down gracefully: fetching stops, every partition
finishes its batches, the sinks are flushed, state is saved and offsets are
committed; then fusebox exits 0. A second signal kills it.`

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "--config FILE [flags]", runDescription, stdout)
	cfgPath := fs.String("config", "", "SLO `file` (YAML); default $"+envConfig)
	insecure := fs.Bool("insecure-unsigned", false, "publish unsigned fuse commands when no signing key is configured (gateways must accept unsigned commands)")
	keysFile := fs.String("fuse-keys", "", "`file` of fuse signing keys (\"id:secret\" lines); overrides signing.keys_file")
	instanceID := fs.String("instance-id", "", "static group membership `id`, stable per process and unique in the deployment (\"auto\": the host name); overrides kafka.instance_id")
	for _, o := range runOverrides {
		fs.String(o.flag, "", o.usage+"; overrides "+o.field+" and $"+o.env)
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if *cfgPath == "" {
		*cfgPath = os.Getenv(envConfig)
	}
	if *cfgPath == "" {
		return usageError(fs, stderr, "--config FILE is required (or $%s)", envConfig)
	}
	f, err := config.LoadWith(*cfgPath, runConfigOverrides(fs, os.LookupEnv)...)
	if err != nil {
		printConfigErrors(stderr, "fusebox run", *cfgPath, err)
		return exitFailure
	}
	if *instanceID != "" {
		f.Kafka.InstanceID = *instanceID
	}
	log, err := observe.NewFormatLogger(stderr, f.Log.Level, f.Log.Format)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox run: log: %v\n", err)
		return exitFailure
	}
	ring, keySrc, err := loadKeyring(f.Signing, *keysFile)
	if err != nil {
		log.Error("fusebox refuses to start: "+err.Error(), "config", *cfgPath)
		return exitFailure
	}
	// The observability server comes up first, so that /healthz answers
	// while fusebox connects; /readyz says why it is not ready yet.
	fb, err := product.Start(ctx, product.Config{File: f, Logger: log, Keys: ring, KeysSource: keySrc, Unsigned: *insecure, Version: observe.Version()})
	if err != nil {
		logStartError(log, err, f, *cfgPath)
		return exitFailure
	}
	defer fb.Close()
	if fb.Addr() != "" {
		log.Info("serving /metrics, /healthz and /readyz", "addr", fb.Addr(), "pprof", f.HTTP.Pprof, "ui", f.HTTP.UI)
		if page := fb.Page(); page != nil {
			log.Info("serving the live page", "url", "http://"+fb.Addr()+"/ui/", "max_series", page.Config().MaxSeries, "max_points", page.Config().MaxPoints)
		}
	}

	if _, err := fb.Open(ctx); err != nil {
		if ctx.Err() != nil {
			log.Info("stopped while starting", "cause", context.Cause(ctx))
			return exitOK
		}
		log.Error("fusebox could not start: "+err.Error(), "config", *cfgPath, "brokers", strings.Join(f.Kafka.Brokers, ","))
		return exitFailure
	}
	log.Info("fusebox running", "config", *cfgPath, "version", f.Version, "brokers", strings.Join(f.Kafka.Brokers, ","),
		"group", f.Kafka.Group, "slos", len(f.SLOs), "sinks", sinkNames(f), "signing", fb.Signing())
	if err := fb.Run(ctx); err != nil {
		log.Error("fusebox stopped on an error: " + err.Error())
		return exitFailure
	}
	log.Info("fusebox stopped: input drained, sinks flushed, state saved, offsets committed")
	return exitOK
}

// logStartError logs why product.Start failed: the signing key (no key,
// an expired one), the live page's store or the HTTP address.
func logStartError(log *slog.Logger, err error, f *config.File, cfgPath string) {
	var se *product.StartError
	switch {
	case errors.Is(err, product.ErrNoKeys):
		log.Error("fusebox refuses to start: "+noKeyError(f.Signing).Error(), "config", cfgPath)
	case errors.As(err, &se) && se.Part == product.PartSigning:
		log.Error("fusebox refuses to start: "+se.Err.Error(), "config", cfgPath)
	case errors.As(err, &se) && se.Part == product.PartHTTP:
		log.Error("http.listen: "+se.Err.Error(), "listen", f.HTTP.Listen)
	default:
		log.Error(err.Error()) // "http.ui: ..."
	}
}

// noKeyError is why fusebox refuses to start without a signing key, and
// how to give one.
func noKeyError(s config.Signing) error {
	env := s.KeysEnv
	if env == "" {
		env = fuse.EnvKeys
	}
	return fmt.Errorf("no fuse signing key: set signing.keys_file (or --fuse-keys FILE), or put \"id:secret\" keys in $%s (signing.keys_env); "+
		"or pass --insecure-unsigned (signing.insecure_unsigned: true) to publish unsigned commands, which gateways accept only when told to", env)
}

// loadKeyring reads the fuse signing keys from --fuse-keys (keysFlag),
// else signing.keys_file, else the environment variable signing.keys_env,
// applying signing.active_key. It also returns where they came from (never
// the secret). Nil (and no error) when none is configured; product.Start
// checks the active key's not-after.
func loadKeyring(s config.Signing, keysFlag string) (*fuse.Keyring, string, error) {
	var (
		ring *fuse.Keyring
		src  string
		err  error
	)
	switch {
	case keysFlag != "":
		src = "--fuse-keys " + keysFlag
		ring, err = fuse.LoadKeyringFile(keysFlag)
	case s.KeysFile != "":
		src = "signing.keys_file " + s.KeysFile
		ring, err = fuse.LoadKeyringFile(s.KeysFile)
	case s.KeysEnv != "":
		src = "$" + s.KeysEnv + " (signing.keys_env)"
		if v := os.Getenv(s.KeysEnv); strings.TrimSpace(v) != "" {
			ring, err = fuse.ParseKeyring(v)
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("fuse signing keys from %s: %w", src, err)
	}
	if ring != nil && s.ActiveKey != "" && s.ActiveKey != ring.Active() {
		var keys []fuse.Key
		for _, id := range ring.IDs() {
			k, _ := ring.Key(id)
			keys = append(keys, k)
		}
		if ring, err = fuse.NewKeyring(s.ActiveKey, keys...); err != nil {
			return nil, "", fmt.Errorf("signing.active_key: %w", err)
		}
	}
	return ring, src, nil
}

// printConfigErrors prints a config.Load error: one line per problem,
// each "file:line: field: reason".
func printConfigErrors(w io.Writer, prefix, path string, err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	fmt.Fprintf(w, "%s: %s: %d problem(s):\n", prefix, path, len(errs))
	for _, e := range errs {
		fmt.Fprintf(w, "  %v\n", e)
	}
}

// sinkNames lists the sinks the config turns on.
func sinkNames(f *config.File) string {
	var s []string
	if f.Sinks.Kafka.Enabled {
		s = append(s, "kafka")
	}
	if len(f.Sinks.ClickHouse.Addr) > 0 {
		s = append(s, "clickhouse")
	}
	if f.Sinks.JSONL.Path != "" {
		s = append(s, "jsonl")
	}
	return strings.Join(s, ",")
}
