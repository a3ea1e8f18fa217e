package product

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/internal/ui"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// keyCheckEvery is how often a running fusebox checks its active signing
// key's not-after (it logs once when the key enters its warning window,
// once when it expires).
const keyCheckEvery = time.Minute

// errStarting is /readyz's answer between Start and the end of Open.
var errStarting = errors.New("starting: connecting to Kafka, creating topics, migrating ClickHouse")

// Fusebox is an assembled fusebox: its signer and HTTP server are up
// (Start), its pipeline opened by Open and driven by Run.
type Fusebox struct {
	cfg     Config
	signer  *fuse.Signer
	signing string
	page    *ui.Store
	sinks   []engine.Sink // ExtraSinks, then page
	srv     *observe.Server
	running atomic.Pointer[pipeline.Pipeline]
	// stopWatch ends the signing key's watch (nil: no key with a
	// not-after to watch).
	stopWatch context.CancelFunc
}

// Start validates c and sets up what comes before the pipeline, in order:
// the signer (a *StartError of PartSigning: ErrNoKeys, or an active key
// past its not-after), a warning log when commands go out unsigned, the
// live page's store when http.ui is on (PartUI), and the HTTP server when
// http.listen is set (PartHTTP: a bad or busy address; see
// Config.HTTPFallback), which stops when ctx ends (unless
// Config.ServeUntilClose). It then watches the active key's expiry (when
// it has a not-after) until ctx ends or Close. On error nothing is left
// running. Close the Fusebox when done.
func Start(ctx context.Context, c Config) (*Fusebox, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	f, log := c.File, c.Logger
	fb := &Fusebox{cfg: c}
	var err error
	if fb.signer, fb.signing, err = newSigner(&c, time.Now()); err != nil {
		return nil, &StartError{Part: PartSigning, Err: err}
	}
	if fb.signer.Unsigned() {
		log.Warn("fuse commands are published UNSIGNED (--insecure-unsigned or signing.insecure_unsigned): gateways can be spoofed by anyone who can write to " + f.Topics.Fuse)
	}
	fb.sinks = append(fb.sinks, c.ExtraSinks...)
	if f.HTTP.UI {
		if fb.page, err = ui.NewStore(ui.Config{}); err != nil {
			return nil, &StartError{Part: PartUI, Err: err}
		}
		fb.sinks = append(fb.sinks, fb.page)
	}
	if f.HTTP.Listen != "" {
		if fb.srv, err = fb.serve(ctx); err != nil {
			return nil, &StartError{Part: PartHTTP, Err: err}
		}
	}
	if c.Keys != nil && expires(c.Keys) {
		wctx, stop := context.WithCancel(ctx)
		fb.stopWatch = stop
		go watchSigningKey(wctx, log, c.Keys, c.KeysSource, f.Signing.ExpiryWarning, keyCheckEvery)
	}
	return fb, nil
}

// expires reports whether ring's active key has a not-after.
func expires(ring *fuse.Keyring) bool {
	k, _ := ring.Key(ring.Active())
	return !k.NotAfter().IsZero()
}

// serve starts the observability server on http.listen: /metrics of the
// pipeline once opened (its starting values before), /readyz, pprof with
// http.pprof, the live page's routes.
func (fb *Fusebox) serve(ctx context.Context) (*observe.Server, error) {
	f := fb.cfg.File
	var routes map[string]http.Handler
	if fb.page != nil {
		routes = fb.page.Routes()
	}
	opts := observe.Options{
		Sources: []observe.Source{observe.SourceFunc(func(s *observe.Snapshot) {
			if p := fb.running.Load(); p != nil {
				p.Metrics().Collect(s)
			} else {
				pipeline.StartingMetrics().Collect(s)
			}
		}), SigningKeyMetrics(fb.cfg.Keys)},
		Ready: func() error {
			if p := fb.running.Load(); p != nil {
				return p.Ready()
			}
			return errStarting
		},
		Pprof:   f.HTTP.Pprof,
		Routes:  routes,
		Logger:  fb.cfg.Logger.With("component", "http"),
		Version: fb.cfg.Version,
	}
	if fb.cfg.ServeUntilClose {
		ctx = context.WithoutCancel(ctx)
	}
	srv, err := observe.Serve(ctx, f.HTTP.Listen, opts)
	if err != nil && fb.cfg.HTTPFallback && errors.Is(err, syscall.EADDRINUSE) {
		srv, err = observe.Serve(ctx, "127.0.0.1:0", opts)
	}
	return srv, err
}

// Open opens the pipeline (pipeline.New: Kafka clients, missing topics,
// ClickHouse migrations, the sinks, the state store) with the signer and
// the extra sinks; from then on /metrics and /readyz follow it. Its
// error is pipeline.New's (ctx ending while it connects included). Open
// once; nothing is consumed until Run.
func (fb *Fusebox) Open(ctx context.Context) (*pipeline.Pipeline, error) {
	if fb.running.Load() != nil {
		return nil, errors.New("product: Open called twice")
	}
	p, err := pipeline.New(ctx, pipeline.Options{Config: fb.cfg.File, Logger: fb.cfg.Logger, Signer: fb.signer,
		InsecureUnsigned: fb.signer.Unsigned(), ExtraSinks: fb.sinks, SourcePartitions: fb.cfg.SourcePartitions})
	if err != nil {
		return nil, err
	}
	fb.running.Store(p)
	return p, nil
}

// Run runs the opened pipeline until ctx ends (nil: fetching stopped,
// every partition finished its batches, the sinks flushed, state saved,
// offsets committed) or a stage fails (that error). It does not close the
// HTTP server: Close does.
func (fb *Fusebox) Run(ctx context.Context) error {
	p := fb.running.Load()
	if p == nil {
		return errors.New("product: Run before Open")
	}
	return p.Run(ctx)
}

// Close stops the signing key's watch and the HTTP server (requests in
// flight get observe.DefaultShutdownTimeout) and returns why the server's
// shutdown was not clean, nil when it was or when there is no server. It
// does not stop the pipeline: Run's context does.
func (fb *Fusebox) Close() error {
	if fb.stopWatch != nil {
		fb.stopWatch()
	}
	if fb.srv == nil {
		return nil
	}
	return fb.srv.Close()
}

// Addr is the HTTP server's address (host:port), "" when http.listen is
// off.
func (fb *Fusebox) Addr() string {
	if fb.srv == nil {
		return ""
	}
	return fb.srv.Addr()
}

// Page is the live page's store, nil when http.ui is off.
func (fb *Fusebox) Page() *ui.Store { return fb.page }

// Signing says how the fuse commands are signed, for logs: "key ID from
// SOURCE" (or "key ID" for a throwaway key), or "unsigned".
func (fb *Fusebox) Signing() string { return fb.signing }
