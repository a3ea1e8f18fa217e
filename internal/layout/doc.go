// Package layout holds no code: its test checks that the module's
// dependencies point the way DESIGN.md and the README's Layout section say.
package layout
