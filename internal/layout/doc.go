// Package layout holds no code: its tests check that the module's
// dependencies point down, the way docs/architecture.md ("The layers")
// says, that every relative link of README.md and docs/ resolves, and
// run the tests of the repository's other Go modules (fuse,
// fuse/kafkago), which `go test ./...` at the root does not match, but
// the Helm chart's check (deploy/helm/chartcheck), which scripts/test runs
// as a part of its own.
package layout
