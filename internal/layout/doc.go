// Package layout holds no code: its tests check that the module's
// dependencies point the way DESIGN.md and the README's Layout section say,
// and run the tests of the repository's other Go modules (fuse,
// fuse/kafkago), which `go test ./...` at the root does not match.
package layout
