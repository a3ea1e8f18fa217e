// Package registry is the one list of the processor kinds an SLO entry can
// name: tail, drift, decay, scaling, corrections and burnrate (Kinds).
//
// Each kind is exported by its own package (tail.Kind(), ...; see
// processors.Kind) and says everything the rest of fusebox needs: its
// name (the SLO file's section key and every verdict's Processor), its
// default configuration and a valid sample of it, how to build a
// processor from a configuration, its evaluation interval, the verdict
// metrics it emits, a one-line summary, its state shape (what the SLO's
// state id hashes) and its checks against the file's key dimensions.
//
// Everything that depends on the set of kinds takes it from here and
// loops over it, without naming a kind: decoding and validating the SLO
// file, building the partition workers and the state ids (internal/config,
// which also accepts an extended List), `fusebox config check`
// and, through Metrics, the breaker's rule validation. Adding a processor
// is one package (with its kind.go) and one line in Kinds;
// TestAddingAKindIsOneLine proves it with a test-only kind.
//
// The list is explicit (no init() registration) and not mutable: With
// returns an extended copy, so that the order, which is the order of the
// SLO file's sections in error messages, is fixed by this package alone.
//
// The rollup processor (per-minute span rollups, no verdicts) and the
// breaker (verdicts in, fuse commands out) are not SLO kinds: the SLO file
// configures them in sections of their own.
package registry
