// Package schemas holds the records fusebox reads and writes — Key, Span,
// Correction, Verdict, FuseCommand, Rollup — with their validation and codecs
// (OTLP protobuf and JSON in, correction JSON in, gen_ai.evaluation.result
// events in OTLP spans and logs with the rules that make corrections of
// them, the internal keyed-batch format between the router and the engine).
//
// It imports only the standard library, protowire and the fuse module's
// fuseschema (the fuse command, Key and the error kinds and builders, which
// it re-exports or calls) and fuseschema/jsonw (its JSON number and string
// writers), so every other package may depend on it.
package schemas
