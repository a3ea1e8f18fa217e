// Package window keeps the event-time windows of the streaming processors:
// samples grouped in fixed-width slots of event time, each slot capped by a
// hash-ordered sample so that memory is bounded and the contents do not
// depend on arrival order.
package window

import (
	"errors"
	"slices"

	"github.com/fusebox-dev/fusebox/processors"
)

// Sample is one observation.
type Sample struct {
	T int64   // event time, Unix ns
	V float64 // the value (ms, tokens, score: the processor decides)
	H uint64  // identity hash of the record (processors.SpanHash)
}

// Slot holds the samples whose event time falls in [Start, Start+width).
type Slot struct {
	Start int64
	// N counts every sample added, kept or not.
	N int64
	// Samples holds at most the store's Cap samples: once full, a max-heap
	// on H, so a new sample replaces the largest hash when its own is
	// smaller. The kept set is the Cap smallest hashes whatever the order of
	// arrival.
	Samples []Sample
}

// Store is the window state of one key and one metric: slots of SlotWidth
// nanoseconds of event time, sorted by start, at most Cap samples each.
//
// Memory is bounded by Cap × (window / SlotWidth + slots ahead of the
// watermark) samples of 24 bytes. Add does not allocate once a slot's
// backing array has grown to Cap.
type Store struct {
	SlotWidth int64
	Cap       int
	Slots     []Slot
}

// ErrBadStore is returned by New for a non-positive width or cap.
var ErrBadStore = errors.New("window: slot width and cap must be positive")

// New returns an empty store.
func New(slotWidth int64, capPerSlot int) (*Store, error) {
	if slotWidth <= 0 || capPerSlot <= 0 {
		return nil, ErrBadStore
	}
	return &Store{SlotWidth: slotWidth, Cap: capPerSlot}, nil
}

// SlotStart is the start of the slot holding event time t (floor division,
// correct for negative t too).
func (s *Store) SlotStart(t int64) int64 {
	r := t % s.SlotWidth
	if r < 0 {
		r += s.SlotWidth
	}
	return t - r
}

// Add puts x into its slot.
func (s *Store) Add(x Sample) {
	sl := s.slotFor(s.SlotStart(x.T))
	sl.N++
	if k := len(sl.Samples); k < s.Cap {
		if k == cap(sl.Samples) && sl != &s.Slots[len(s.Slots)-1] {
			// A late sample into a sealed slot (its array fitted by
			// seal): grow by an eighth, not append's doubling.
			grown := make([]Sample, k, min(s.Cap, k+k/8+2))
			copy(grown, sl.Samples)
			sl.Samples = grown
		}
		sl.Samples = append(sl.Samples, x)
		if len(sl.Samples) == s.Cap {
			heapify(sl.Samples)
		}
		return
	}
	if x.H < sl.Samples[0].H {
		sl.Samples[0] = x
		siftDown(sl.Samples, 0)
	}
}

// slotFor finds or inserts the slot starting at start. Records arrive mostly
// in time order, so the search starts from the newest slot.
func (s *Store) slotFor(start int64) *Slot {
	i := len(s.Slots)
	for i > 0 && s.Slots[i-1].Start > start {
		i--
	}
	if i > 0 && s.Slots[i-1].Start == start {
		return &s.Slots[i-1]
	}
	sl := Slot{Start: start}
	if i == len(s.Slots) {
		s.seal()
		if n := s.sizeHint(); n > 0 {
			sl.Samples = make([]Sample, 0, n)
		}
	}
	s.roomForSlot()
	s.Slots = slices.Insert(s.Slots, i, sl)
	return &s.Slots[i]
}

// roomForSlot makes room for one more slot, growing the array by a
// quarter (at least 2): a key holds a window of slots and one or two
// ahead for as long as it lives (11-12 for a 10-minute window of
// 1-minute slots), where append's doubling left it at 16, and the evicted
// slots are dropped in place, so the array is never shrunk.
func (s *Store) roomForSlot() {
	n := len(s.Slots)
	if n < cap(s.Slots) {
		return
	}
	grown := make([]Slot, n, n+max(2, n/4))
	copy(grown, s.Slots)
	s.Slots = grown
}

// seal fits the newest slot's array to its samples, as a newer slot
// starts, and returns the array it replaced (nil when it kept it). Why: the
// newest slot grows by append, which doubles, so a slot of a small key
// ends at up to 2x its samples (12 samples a minute: 16), and a processor
// keeps a window of such slots per key. Refitting costs one copy of the
// slot per slot width; a late sample into a sealed slot then grows it by
// an eighth (Add). Arrays with at most a quarter (or 2 samples) more room
// than samples are kept as they are: the copy would save about what the
// allocator's size-class rounding of the new array (up to 1/8 above 1 KiB)
// gives back, and sizeHint's arrays (an eighth over the previous slot's
// count) are left alone.
func (s *Store) seal() []Sample {
	n := len(s.Slots)
	if n == 0 {
		return nil
	}
	sl := &s.Slots[n-1]
	k := len(sl.Samples)
	if cap(sl.Samples)-k <= max(k/4, 2) {
		return nil
	}
	old := sl.Samples
	sl.Samples = append([]Sample(nil), old...)
	return old
}

// sizeHint is the capacity a new newest slot starts with: the kept count
// of the newest slot so far and an eighth more (traffic a little up), at
// most Cap; 0 (append grows it) without one or when it kept fewer than
// minHinted. Why: grown by append from
// empty, a slot's array ends up to 2x its samples (1.25x for large
// ones) and leaves its smaller predecessors as garbage; a key's traffic
// changes little from one slot to the next.
func (s *Store) sizeHint() int {
	n := len(s.Slots)
	if n == 0 {
		return 0
	}
	k := len(s.Slots[n-1].Samples)
	if k < minHinted {
		return 0
	}
	return min(s.Cap, k+k/8+4)
}

// minHinted is the fewest samples in a key's newest slot for sizeHint to
// size the next one: below it append's doubling wastes a few hundred bytes
// at most, and a slot of a few Poisson calls varies too much from one
// interval to the next for a hint to fit better (measured: tail, drift and
// decay kept 5-27% more per small key with hints from 12-sample slots).
const minHinted = 128

func slotStart(sl *Slot) int64 { return sl.Start }

// Collect appends to dst the kept samples with event time in [from, to),
// sorted by (T, H, V) — an order that depends only on the set of samples —
// and returns it with the count of all samples in those slots, kept or
// not. from and to should be slot boundaries; a slot straddling them is
// filtered sample by sample, and its N is then counted only when its whole
// range lies inside.
func (s *Store) Collect(from, to int64, dst []Sample) ([]Sample, int64) {
	var n int64
	for i := range s.Slots {
		sl := &s.Slots[i]
		if sl.Start+s.SlotWidth <= from || sl.Start >= to {
			continue
		}
		base := len(dst)
		if sl.Start >= from && sl.Start+s.SlotWidth <= to {
			n += sl.N
			dst = append(dst, sl.Samples...)
		} else {
			for _, x := range sl.Samples {
				if x.T >= from && x.T < to {
					dst = append(dst, x)
					n++
				}
			}
		}
		// Slots are disjoint in time and in order, so sorting each slot's
		// part sorts the whole; a slot filled in time order (the usual
		// case) is only checked.
		if part := dst[base:]; !slices.IsSortedFunc(part, CompareSamples) {
			slices.SortFunc(part, CompareSamples)
		}
	}
	return dst, n
}

// collect is Collect without the sort: slot by slot, in arrival order.
func (s *Store) collect(from, to int64, dst []Sample) ([]Sample, int64) {
	var n int64
	for i := range s.Slots {
		sl := &s.Slots[i]
		if sl.Start+s.SlotWidth <= from || sl.Start >= to {
			continue
		}
		if sl.Start >= from && sl.Start+s.SlotWidth <= to {
			n += sl.N
			dst = append(dst, sl.Samples...)
			continue
		}
		for _, x := range sl.Samples {
			if x.T >= from && x.T < to {
				dst = append(dst, x)
				n++
			}
		}
	}
	return dst, n
}

// Count returns the number of samples added with event time in whole slots
// inside [from, to).
func (s *Store) Count(from, to int64) int64 {
	var n int64
	for i := range s.Slots {
		sl := &s.Slots[i]
		if sl.Start >= from && sl.Start+s.SlotWidth <= to {
			n += sl.N
		}
	}
	return n
}

// EvictBefore drops every slot that ends at or before t.
func (s *Store) EvictBefore(t int64) {
	s.Slots = processors.DropSlotsBefore(s.Slots, t, s.SlotWidth, slotStart)
}

// Empty reports whether the store holds no slot.
func (s *Store) Empty() bool { return len(s.Slots) == 0 }

// Len is the number of samples kept across all slots.
func (s *Store) Len() int {
	n := 0
	for i := range s.Slots {
		n += len(s.Slots[i].Samples)
	}
	return n
}

// CompareSamples orders samples by (T, H, V): the canonical order of
// Collect, which depends only on the set of samples.
func CompareSamples(a, b Sample) int {
	switch {
	case a.T != b.T:
		if a.T < b.T {
			return -1
		}
		return 1
	case a.H != b.H:
		if a.H < b.H {
			return -1
		}
		return 1
	case a.V < b.V:
		return -1
	case a.V > b.V:
		return 1
	}
	return 0
}

// heapify arranges xs as a max-heap on H.
func heapify(xs []Sample) {
	for i := len(xs)/2 - 1; i >= 0; i-- {
		siftDown(xs, i)
	}
}

func siftDown(xs []Sample, i int) {
	n := len(xs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		big := l
		if r := l + 1; r < n && xs[r].H > xs[l].H {
			big = r
		}
		if xs[i].H >= xs[big].H {
			return
		}
		xs[i], xs[big] = xs[big], xs[i]
		i = big
	}
}
