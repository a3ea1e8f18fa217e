// Package product assembles the running fusebox once, for every command
// that runs it (`fusebox run`, `fusebox demo`, `fusebox demo --loop` and
// `fusebox bench loop`): the fuse command signer (its keys checked, their
// expiry watched and exported), the observability server (/metrics,
// /healthz, /readyz, pprof, the live page /ui/ with its store as an extra
// sink) and the pipeline (pipeline.New, then its Run).
//
// A command says only what is its own: where the SLO file and the keys
// come from (a file and flags, or built in and thrown away), its extra
// sinks (the demo's terminal view), whether a busy HTTP address may fall
// back to a free port, and what runs beside the pipeline (the demo's
// broker, generator and view; the loop's gateways and users). The life
// of a Fusebox is
//
//	fb, err := product.Start(ctx, product.Config{File: f, Keys: ring})
//	defer fb.Close()      // stops the HTTP server
//	p, err := fb.Open(ctx) // connects to Kafka, creates topics, migrates ClickHouse
//	err = fb.Run(ctx)      // until ctx ends: drain, flush, save state, commit
//
// Start has the server answer /healthz at once and /readyz "starting"
// until Open has returned; from then on /metrics and /readyz follow the
// pipeline. Only commands assemble: nothing under internal/ imports
// this package (or pipeline).
package product
