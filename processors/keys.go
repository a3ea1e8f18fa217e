package processors

import (
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
)

// KeyOrder is reusable scratch for SortedKeys: a processor that keeps one
// lists its keys at every evaluation without allocating once the buffers
// have grown. Not safe for concurrent use.
type KeyOrder struct {
	named []namedKey
	keys  []schemas.Key
}

type namedKey struct {
	name string
	key  schemas.Key
}

// SortedKeys returns the keys of m sorted by Key.String: the order in which
// every processor emits verdicts and writes snapshots, so that both are
// the same bit for bit whatever the map's iteration order. Each key is
// rendered once (not once per comparison). With scratch nil the result is
// freshly allocated; otherwise it lives in scratch's buffers and is valid
// until the next call with the same scratch.
func SortedKeys[V any](m map[schemas.Key]V, scratch *KeyOrder) []schemas.Key {
	if scratch == nil {
		scratch = &KeyOrder{}
	}
	named := scratch.named[:0]
	for k := range m {
		named = append(named, namedKey{k.String(), k})
	}
	// Key.String is injective, so names never tie and the order is total.
	slices.SortFunc(named, func(a, b namedKey) int { return strings.Compare(a.name, b.name) })
	keys := scratch.keys[:0]
	for _, n := range named {
		keys = append(keys, n.key)
	}
	clear(named) // drop the rendered names until the next call
	scratch.named, scratch.keys = named[:0], keys
	return keys
}

// FloorTo is the start of the interval of width w (> 0) holding t: the
// largest multiple of w at or below t, correct for negative t too.
func FloorTo(t, w int64) int64 { return t - FloorMod(t, w) }

// FloorMod is a modulo b (> 0) in [0, b), also for negative a (Go's %
// keeps the sign of a): the index of a ring slot.
func FloorMod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}
