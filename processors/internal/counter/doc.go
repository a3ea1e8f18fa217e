// Package counter is a test-only SLO processor kind: it counts the calls
// of every key and emits one verdict per key per evaluation, whose value
// is the key's count since the processor started (so a lost checkpoint
// shows: the counts restart from 0). A key breaches when its count in the
// last interval exceeds Limit.
//
// It exists to prove that adding a processor is one package and one line
// (processors/registry's TestAddingAKindIsOneLine adds it with
// registry.With(counter.Kind())): it is laid out as a real kind is, with
// config.go, the processor, its snapshot and kind.go, and nothing outside
// this package names it.
package counter
