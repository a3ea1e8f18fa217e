package demo

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"syscall"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/internal/ui"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// serveHTTP starts the demo's observability server on cfg.HTTP.Listen
// (nil when that is ""): /metrics, /healthz, /readyz of the running
// pipeline and, with page, the live page. When fallback is set and the
// address is busy (another fusebox on 9464), it listens on a free port of
// 127.0.0.1 instead. The server stops when Close is called, not with ctx's
// cancellation: the demo closes it after BeforeExit.
func serveHTTP(ctx context.Context, cfg *config.File, fallback bool, page *ui.Store, running *atomic.Pointer[pipeline.Pipeline], logger *slog.Logger) (*observe.Server, error) {
	if cfg.HTTP.Listen == "" {
		return nil, nil
	}
	var routes map[string]http.Handler
	if page != nil {
		routes = page.Routes()
	}
	opts := observe.Options{
		Sources: []observe.Source{observe.SourceFunc(func(s *observe.Snapshot) {
			if p := running.Load(); p != nil {
				p.Metrics().Collect(s)
			} else {
				pipeline.StartingMetrics().Collect(s)
			}
		})},
		Ready: func() error {
			if p := running.Load(); p != nil {
				return p.Ready()
			}
			return errors.New("starting")
		},
		Routes: routes,
		Logger: logger.With("component", "http"),
	}
	ctx = context.WithoutCancel(ctx)
	srv, err := observe.Serve(ctx, cfg.HTTP.Listen, opts)
	if err != nil && fallback && errors.Is(err, syscall.EADDRINUSE) {
		srv, err = observe.Serve(ctx, "127.0.0.1:0", opts)
	}
	return srv, err
}
