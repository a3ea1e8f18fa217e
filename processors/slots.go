package processors

import "slices"

// DropSlotsBefore removes from slots (sorted by start, which startOf
// reads) the leading ones of width w that end at or before t, and returns
// the rest (in place). It runs at evaluations, not per record: the finding
// or inserting of a record's slot stays hand-written in each slot type's
// hot path, where a generic version with a startOf callback cannot be
// inlined and costs about 6 ns more per record.
func DropSlotsBefore[S any](slots []S, t, w int64, startOf func(*S) int64) []S {
	d := 0
	for d < len(slots) && startOf(&slots[d])+w <= t {
		d++
	}
	return slices.Delete(slots, 0, d)
}
