// Command gateway is an example gateway: it follows fusebox's fuse topic
// with package fuse, prints every command it applies, the commands it
// did not apply (by reason, e.g. expired ones read from a backlog), and
// its decision for a few request keys at an interval.
//
//	go run ./examples/gateway --brokers 127.0.0.1:9092 --keys /etc/fusebox/fuse.keys \
//	    --key acme/chat/gpt-4o-mini/baseline --key acme/chat/gpt-4o-mini/canary
//
// The default keys are those two: the target of the latency-tail incident
// of `fusebox gen`'s scenarios (the demo's and examples/scenario.yaml).
//
// Without --keys it reads FUSEBOX_FUSE_KEYS; with neither it refuses to
// start unless --insecure-unsigned is given (for a fusebox run that way).
// -h prints the flags to stdout and exits 0; a bad flag prints one line to
// stderr and exits 2; a failure exits 1.
//
// With --listen it is also an OpenAI-compatible proxy to --upstream built
// on fuse/fusehttp: requests to /v1/chat/completions, /v1/responses and
// /v1/embeddings get the decision for their key (headers X-Fusebox-Tenant,
// -Service, -Variant; the body's model) applied — degraded to the
// fallback, 503 when tripped, 429 for a throttle's refused share — and
// /metrics serves the counts by decision:
//
//	go run ./examples/gateway --keys fuse.keys --listen 127.0.0.1:8080 --upstream https://api.openai.com
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fusehttp"
	"github.com/fusebox-dev/fusebox/fuse/kafkago"
	"github.com/fusebox-dev/fusebox/schemas"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "gateway: %v; see gateway -h\n", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line (exit 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

type keyList []schemas.Key

func (l *keyList) String() string { return fmt.Sprint(*l) }
func (l *keyList) Set(s string) error {
	k, err := schemas.ParseKey(s)
	if err != nil {
		return err
	}
	*l = append(*l, k)
	return nil
}

// run is main without the process: it returns when ctx ends.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; -h prints usage below
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated Kafka seed brokers")
	topic := fs.String("topic", fuse.DefaultTopic, "fuse topic")
	keysFile := fs.String("keys", "", "key file (id:secret per line); default: $"+fuse.EnvKeys)
	insecure := fs.Bool("insecure-unsigned", false, "accept unsigned commands (fusebox run with --insecure-unsigned)")
	client := fs.String("client", "franz-go", "Kafka client: franz-go or kafka-go")
	every := fs.Duration("every", 5*time.Second, "how often to print decisions")
	listen := fs.String("listen", "", "also serve an OpenAI-compatible proxy on this address (fuse/fusehttp)")
	upstream := fs.String("upstream", "", "the provider the proxy forwards to (with --listen)")
	var keys keyList
	fs.Var(&keys, "key", "request `key` tenant/service/model/variant to decide for (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(out, fs)
			return err
		}
		return usageError{errors.New(strings.Replace(strings.Replace(err.Error(), "flag -", "flag --", 1), ": -", ": --", 1))}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if len(keys) == 0 {
		keys = keyList{
			{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: "baseline"},
			{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: "canary"},
		}
	}

	var ring *fuse.Keyring
	var err error
	if *keysFile != "" {
		ring, err = fuse.LoadKeyringFile(*keysFile)
	} else {
		ring, err = fuse.KeyringFromEnv()
	}
	if err != nil && !(errors.Is(err, fuse.ErrNoKeys) && *insecure) {
		return fmt.Errorf("%w (give --keys or $%s, or --insecure-unsigned)", err, fuse.EnvKeys)
	}

	opts := []fuse.Opt{fuse.WithLogger(slog.New(slog.NewTextHandler(out, nil)))}
	if ring != nil {
		opts = append(opts, fuse.WithKeyring(ring))
	}
	if *insecure {
		opts = append(opts, fuse.WithInsecureUnsigned())
	}
	addrs := strings.Split(*brokers, ",")
	switch *client {
	case "franz-go":
		opts = append(opts, fuse.WithBrokers(addrs...), fuse.WithTopic(*topic))
	case "kafka-go":
		opts = append(opts, fuse.WithSource(kafkago.NewSource(addrs, *topic, nil)))
	default:
		return usageError{fmt.Errorf("--client %q: want franz-go or kafka-go", *client)}
	}
	c, err := fuse.NewClient(opts...)
	if err != nil {
		return err
	}
	c.OnChange(func(old, new schemas.FuseCommand) {
		fmt.Fprintf(out, "command %s v%d: %s level %d state %s (was %s) expires %s\n",
			show(new.Target), new.Version, new.Action, new.Level, new.State, orNone(old.Action),
			time.Unix(0, new.ExpiresAtUnixNano).UTC().Format(time.RFC3339))
	})

	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if err := c.WaitReady(ctx); err != nil {
		return <-done
	}
	fmt.Fprintf(out, "ready: %d targets\n", len(c.Snapshot()))
	if *listen != "" {
		stop, err := serveProxy(c, *listen, *upstream, out)
		if err != nil {
			return err
		}
		defer stop()
	}
	t := time.NewTicker(*every)
	defer t.Stop()
	lastRejected := "none"
	for {
		// Commands not applied, by reason, when that changes: while
		// fusebox works through a backlog its older commands arrive
		// already expired (see docs/gateways.md, "The command clock").
		if r := rejected(c.Stats()); r != lastRejected {
			fmt.Fprintln(out, "not applied: "+r)
			lastRejected = r
		}
		for _, k := range keys {
			d := c.Decide(k)
			line := "decide " + show(k) + ": " + d.Outcome.String()
			if d.Fallback != "" {
				line += " to " + d.Fallback
			}
			if d.Probe || d.Outcome == fuse.Throttle {
				line += fmt.Sprintf(" (admit %.0f%%)", 100*d.Fraction)
			}
			if d.Matched {
				line += fmt.Sprintf(" [target %s v%d]", show(d.Command.Target), d.Command.Version)
			}
			fmt.Fprintln(out, line)
		}
		select {
		case <-ctx.Done():
			return <-done
		case <-t.C:
		}
	}
}

// serveProxy serves the fusehttp middleware in front of a reverse proxy
// to upstream, and the decision counts on /metrics, until stop.
func serveProxy(c *fuse.Client, addr, upstream string, out io.Writer) (stop func(), err error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("--upstream %q: want an absolute URL such as https://api.openai.com", upstream)
	}
	var counts fusehttp.Counters
	mw, err := fusehttp.New(c, fusehttp.WithMetrics(&counts))
	if err != nil {
		return nil, err
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // stream SSE chunks as they come
	mux := http.NewServeMux()
	mux.Handle("/metrics", &counts)
	mux.Handle("/", mw.Handler(proxy))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(out, "proxy: listening on %s, forwarding to %s\n", ln.Addr(), u)
	return func() { srv.Close() }, nil
}

// usage prints the flags, spelt --flag, to w.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage: gateway [flags]\n\nFollows fusebox's fuse topic, prints every command it applies and, every --every,\nits decision for each --key.\n\nFlags:")
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		if name != "" {
			name = " " + name
		}
		fmt.Fprintf(w, "  --%s%s\n    \t%s", f.Name, name, text)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// show prints a key for people; Key.String (the record key) path-escapes
// each dimension, "*" included.
func show(k schemas.Key) string {
	return k.Tenant + "/" + k.Service + "/" + k.Model + "/" + k.Variant
}

// rejected prints the non-zero rejection counts ("expired 3, stale 1"), in
// the order of fuse.RejectReasons; "none" when there are none.
func rejected(s fuse.Stats) string {
	var parts []string
	for _, r := range fuse.RejectReasons {
		if n := s.Rejected[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func orNone(a schemas.Action) string {
	if a == "" {
		return "none"
	}
	return string(a)
}
