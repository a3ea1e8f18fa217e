package burnrate

import (
	"math"

	"github.com/fusebox-dev/fusebox/processors"
)

// bucket counts the calls of one interval: the interval's start (Unix ns)
// and its good and bad calls. It is the wide form of a ring slot and the
// snapshot's layout.
type bucket struct {
	Start     int64
	Good, Bad uint32
}

// narrowBucket is a ring slot in 8 bytes instead of bucket's 16: the
// counts in 16 bits, and the start as the slot's lap (which turn of the
// ring it is, the start being (lap·len + slot)·width) encoded in tag: 0 is
// a start of 0 (the zero slot, never written), lap+1 for lap ≥ 0, lap for
// lap < 0. A 0.2 calls/s key has ~12 calls a one-minute bucket and ~720
// an hourly one, a busy key (11 calls/s) 660 and 39,600: both fit.
type narrowBucket struct {
	tag       int32
	good, bad uint16
}

// ring is a key's fine or coarse ring: narrow while every count fits 16
// bits and every start its lap in 32 bits, wide (the 16-byte buckets)
// from the first count or start that does not, for the key's life in this
// process (a restore narrows it again when it can). Both forms hold the
// same (start, good, bad) per slot, so the verdicts and the snapshot bytes
// do not depend on the form. The zero ring has no slots (no coarse ring).
type ring struct {
	narrow []narrowBucket
	wide   []bucket
}

func newRing(n int) ring {
	if n == 0 {
		return ring{}
	}
	return ring{narrow: make([]narrowBucket, n)}
}

// len is the number of slots.
func (r *ring) len() int64 {
	if r.wide != nil {
		return int64(len(r.wide))
	}
	return int64(len(r.narrow))
}

// absent reports a ring with no slots (a configuration without the coarse
// ring).
func (r *ring) absent() bool { return r.narrow == nil && r.wide == nil }

// at returns slot i's start and counts; width is the ring's bucket width.
func (r *ring) at(i, width int64) (start int64, good, bad uint32) {
	if r.wide != nil {
		b := &r.wide[i]
		return b.Start, b.Good, b.Bad
	}
	b := &r.narrow[i]
	return r.start(b.tag, i, width), uint32(b.good), uint32(b.bad)
}

// start decodes a narrow slot's tag.
func (r *ring) start(tag int32, i, width int64) int64 {
	if tag == 0 {
		return 0
	}
	lap := int64(tag)
	if tag > 0 {
		lap--
	}
	return (lap*int64(len(r.narrow)) + i) * width
}

// tagOf encodes start for slot i of a narrow ring, false when it has no
// tag (not a multiple of width in slot i, or a lap outside 32 bits: a
// start more than ~2^31 turns of the ring from 1970).
func (r *ring) tagOf(start, i, width int64) (int32, bool) {
	if start == 0 {
		return 0, true
	}
	n := int64(len(r.narrow))
	q := start / width
	if q*width != start || processors.FloorMod(q, n) != i {
		return 0, false
	}
	lap := (q - i) / n // exact: q − i is a multiple of n
	var tag int32
	switch {
	case lap >= 0 && lap < math.MaxInt32:
		tag = int32(lap + 1)
	case lap < 0 && lap >= math.MinInt32:
		tag = int32(lap)
	default:
		return 0, false
	}
	// The decoded start must be start itself: q − i and the products can
	// wrap for a start within a ring's length of the int64 limits.
	return tag, r.start(tag, i, width) == start
}

// reset empties slot i for the bucket starting at start.
func (r *ring) reset(i, start, width int64) {
	if r.wide == nil {
		if tag, ok := r.tagOf(start, i, width); ok {
			r.narrow[i] = narrowBucket{tag: tag}
			return
		}
		r.widen(width)
	}
	r.wide[i] = bucket{Start: start}
}

// inc counts one good or bad call in slot i.
func (r *ring) inc(i, width int64, bad bool) {
	if r.wide == nil {
		b := &r.narrow[i]
		switch {
		case bad && b.bad < math.MaxUint16:
			b.bad++
			return
		case !bad && b.good < math.MaxUint16:
			b.good++
			return
		}
		r.widen(width)
	}
	if bad {
		r.wide[i].Bad++
	} else {
		r.wide[i].Good++
	}
}

// widen turns the ring into its wide form, slot for slot.
func (r *ring) widen(width int64) {
	w := make([]bucket, len(r.narrow))
	for i := range w {
		s, g, b := r.at(int64(i), width)
		w[i] = bucket{Start: s, Good: g, Bad: b}
	}
	r.wide, r.narrow = w, nil
}

// ringOf holds the snapshot's buckets in the narrow form when every slot
// fits it, else as they are.
func ringOf(wide []bucket, width int64) ring {
	if len(wide) == 0 {
		return ring{}
	}
	r := ring{narrow: make([]narrowBucket, len(wide))}
	for i, b := range wide {
		tag, ok := r.tagOf(b.Start, int64(i), width)
		if !ok || b.Good > math.MaxUint16 || b.Bad > math.MaxUint16 {
			return ring{wide: wide}
		}
		r.narrow[i] = narrowBucket{tag: tag, good: uint16(b.Good), bad: uint16(b.Bad)}
	}
	return r
}
