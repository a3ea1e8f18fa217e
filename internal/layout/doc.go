// Package layout holds no code: its test checks that the module's
// dependencies point down, the way docs/architecture.md's layers say.
package layout
