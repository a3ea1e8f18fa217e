package demo

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/product"
)

// TestServeHTTPFallsBackFromABusyDefault: the built-in address busy (a
// fusebox already on it), the demo takes a free port and serves the page
// there; an address the user gave is an error instead.
func TestServeHTTPFallsBackFromABusyDefault(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg, err := Config("127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.HTTP.UI || cfg.HTTP.Listen != "127.0.0.1:9464" {
		t.Fatalf("the demo's SLO file: http %+v, want the page on 127.0.0.1:9464", cfg.HTTP)
	}
	cfg.HTTP.Listen = busy.Addr().String()
	ring, err := randomKeyring()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// As Run starts it: the fallback only for the built-in address (no --http).
	start := func(fallback bool) (*product.Fusebox, error) {
		return product.Start(context.Background(), product.Config{File: cfg, Logger: log, Keys: ring, HTTPFallback: fallback, ServeUntilClose: true})
	}
	if srv, err := start(false); err == nil {
		srv.Close()
		t.Fatal("a busy address given by the user was accepted")
	}
	srv, err := start(true)
	if err != nil {
		t.Fatalf("busy default: %v, want a free port", err)
	}
	defer srv.Close()
	if srv.Addr() == busy.Addr().String() {
		t.Fatalf("listening on the busy address %s", srv.Addr())
	}
	resp, err := http.Get("http://" + srv.Addr() + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/ui/ on the fallback port: %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + srv.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the pipeline runs: %d, want 503", resp.StatusCode)
	}
}
