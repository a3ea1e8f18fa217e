package product

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/observe"
)

// Config is what Start assembles. File is required; the zero value of
// every other field is its default. Start validates it once, before it
// sets anything up.
type Config struct {
	// File is the loaded SLO file (config.Load or config.Parse): the
	// pipeline's settings, http.listen, http.ui, http.pprof,
	// signing.insecure_unsigned and signing.expiry_warning. Required.
	File *config.File
	// Logger receives the logs of the pipeline, of the HTTP server (with
	// component "http") and of the signing key's checks. Default:
	// discarded.
	Logger *slog.Logger
	// Keys sign the fuse commands (the active key signs). KeysSource
	// says where they came from, in logs and errors, never the secret
	// (e.g. "--fuse-keys FILE"; "" for a throwaway key). Nil Keys publish
	// the commands unsigned, which needs Unsigned or the file's
	// signing.insecure_unsigned; else Start fails with ErrNoKeys.
	Keys       *fuse.Keyring
	KeysSource string
	Unsigned   bool
	// ExtraSinks receive the engine's output too, before the live page's
	// store (the demo's terminal view). Default none.
	ExtraSinks []engine.Sink
	// SourcePartitions is the partition count of the source topics the
	// pipeline creates when they are missing. Default 6 (the pipeline's);
	// it must not be negative.
	SourcePartitions int32
	// HTTPFallback, when http.listen is in use (another fusebox on the
	// demo's built-in port), listens on a free port of 127.0.0.1 instead.
	// Default false: a busy address fails Start.
	HTTPFallback bool
	// ServeUntilClose keeps the HTTP server up when Start's context ends,
	// until Close (the demo serves the page after its pipeline stopped).
	// Default false: the server stops when the context ends.
	ServeUntilClose bool
	// Version is the version label of fusebox_build_info. Default
	// observe.Version(): the stamped release version, else the module's.
	Version string
}

// ErrNoKeys is Start's error (as the Err of a *StartError of PartSigning)
// when Config has no Keys and unsigned commands were not allowed.
var ErrNoKeys = errors.New("no fuse signing key, and unsigned commands not allowed")

// validate reports the first thing wrong with c and fills in the
// defaults.
func (c *Config) validate() error {
	if c.File == nil {
		return errors.New("product: Config.File is nil: give the loaded SLO file")
	}
	if c.SourcePartitions < 0 {
		return fmt.Errorf("product: Config.SourcePartitions %d: must not be negative", c.SourcePartitions)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Version == "" {
		c.Version = observe.Version()
	}
	return nil
}

// Parts of the assembly a *StartError names.
const (
	PartSigning = "signing"     // the keys: none allowed, or the active one expired
	PartUI      = "http.ui"     // the live page's store
	PartHTTP    = "http.listen" // the observability server: a bad or busy address
)

// StartError is an error of Start: the part that failed (PartSigning,
// PartUI or PartHTTP) and why. Commands word it their way.
type StartError struct {
	Part string
	Err  error
}

func (e *StartError) Error() string { return e.Part + ": " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }
