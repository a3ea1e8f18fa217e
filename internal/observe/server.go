package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure the observability endpoints.
type Options struct {
	// Sources supply the pipeline's numbers on every scrape of /metrics.
	Sources []Source
	// Ready says whether the process is ready for traffic: nil when it is
	// (e.g. the consumers joined their groups and restored their state),
	// else why not. /readyz answers 200 or 503 with that reason, and
	// fusebox_ready is 1 or 0. Nil Ready means always ready.
	Ready func() error
	// Pprof serves the runtime profiles under /debug/pprof/. Default off:
	// they reveal internals and a CPU profile costs CPU.
	Pprof bool
	// Logger receives the scrape errors and the server's own errors.
	// Default: discard.
	Logger *slog.Logger
	// Version is the build's version, the version label of
	// fusebox_build_info. Default "unknown".
	Version string
	// Routes are more handlers on the same listener, by http.ServeMux
	// pattern (e.g. the live page of internal/ui: "GET /ui/"). A pattern
	// that conflicts with the endpoints above is an error of NewHandler.
	Routes map[string]http.Handler
	// ShutdownTimeout bounds the wait for in-flight requests when the
	// server stops. Default 5s.
	ShutdownTimeout time.Duration
}

// DefaultShutdownTimeout is Options.ShutdownTimeout's default.
const DefaultShutdownTimeout = 5 * time.Second

// Validate reports a nil source or a negative timeout.
func (o Options) Validate() error {
	var errs []error
	for i, s := range o.Sources {
		if s == nil {
			errs = append(errs, fmt.Errorf("observe: Sources[%d] is nil", i))
		}
	}
	if o.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("observe: ShutdownTimeout %v is negative", o.ShutdownTimeout))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Ready == nil {
		o.Ready = func() error { return nil }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Version == "" {
		o.Version = "unknown"
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	return o
}

// NewHandler returns the endpoints as one http.Handler:
//
//	/metrics        Prometheus text format from a private registry: the
//	                fusebox_* metrics of the sources, go_* and process_*
//	/healthz        200 "ok" while the process serves HTTP at all
//	/readyz         200 "ready", or 503 "not ready: REASON" (Options.Ready)
//	/debug/pprof/*  the runtime profiles, only with Options.Pprof (else 404)
//
// A scrape that meets a bad sample logs it and serves the rest.
func NewHandler(opts Options) (http.Handler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		newCollector(opts.Sources, opts.Ready, opts.Version),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("observe: register collector: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slogPrintln{opts.Logger},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	ready := opts.Ready
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		io.WriteString(w, "ready\n")
	})
	if opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	for pattern, h := range opts.Routes {
		if err := register(mux, pattern, h); err != nil {
			return nil, err
		}
	}
	return mux, nil
}

// register is mux.Handle, with its panic on a bad or conflicting pattern
// turned into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("observe: route %q: %v", pattern, r)
		}
	}()
	if h == nil {
		return fmt.Errorf("observe: route %q: nil handler", pattern)
	}
	mux.Handle(pattern, h)
	return nil
}

// slogPrintln adapts a slog.Logger to promhttp's error log.
type slogPrintln struct{ l *slog.Logger }

func (p slogPrintln) Println(v ...any) {
	p.l.Error("metrics scrape", "err", fmt.Sprint(v...))
}

// Server is a running observability server.
type Server struct {
	srv      *http.Server
	ln       net.Listener
	timeout  time.Duration
	done     chan struct{}
	serveErr error
	stopOnce sync.Once
	stopErr  error
}

// Serve listens on addr ("host:port"; port 0 picks a free one) and serves
// NewHandler(opts) in the background until ctx is cancelled or Close is
// called; then it stops accepting, waits up to opts.ShutdownTimeout for
// requests in flight, and closes. It returns once listening, so a bad
// address or a port in use is an error here, not later.
func Serve(ctx context.Context, addr string, opts Options) (*Server, error) {
	h, err := NewHandler(opts)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("observe: listen on %q: %w", addr, err)
	}
	s := &Server{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
		},
		ln:      ln,
		timeout: opts.ShutdownTimeout,
		done:    make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = fmt.Errorf("observe: serve on %s: %w", ln.Addr(), err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// Addr is the address the server listens on, e.g. "127.0.0.1:9464".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server as a cancelled context does, and returns once it
// has stopped: nil, or why the shutdown was not clean. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.stopErr = fmt.Errorf("observe: shutdown: %w", err)
			_ = s.srv.Close()
		}
		<-s.done
	})
	return s.stopErr
}

// Wait blocks until the server has stopped and returns the error that
// stopped it, nil after a clean stop.
func (s *Server) Wait() error {
	<-s.done
	return s.serveErr
}
