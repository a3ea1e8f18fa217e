// Package layout holds no code: its tests check that the module's
// dependencies point down, the way docs/architecture.md ("The layers")
// says, and that every relative link of README.md and docs/ resolves.
package layout
