package window

import "slices"

// SortedRange caches the sorted values of one Store's whole slots in a
// range of event time, so that a processor evaluating overlapping windows
// every SlotWidth (a 1h reference window advancing by 1m) updates the
// sorted array in O(n + m log m) — drop the slots that left, merge in the
// ones that entered, m values each — instead of sorting all n values again
// in O(n log n).
//
// The result is the multiset of values CollectUniform(from, to) keeps,
// sorted ascending: when no slot of the range overflowed its cap,
// CollectUniform keeps every sample, and so does Values. When one did
// (the uniform sample then depends on every slot's largest hash) Values
// reports false and the caller takes the CollectUniform path. A slot whose
// count N changed since it was cached (a record added after the window
// closed) invalidates the cache: the array is rebuilt. Equal values are
// interchangeable (the array is a multiset), so the result equals sorting
// CollectUniform's values; ±0 compare equal and may come out in either
// order, which no order statistic or rank test can tell apart.
//
// The zero value is empty. It is derived state: never snapshotted, rebuilt
// after a restore on the first call.
type SortedRange struct {
	valid bool
	marks []slotMark // the cached slots, ascending by start
	spare []slotMark // the other buffer of setMarks
	vals  []float64
	rm    []float64   // scratch: values of slots that left, sorted
	add   []float64   // scratch: values of slots that entered, sorted
	free  [][]float64 // per-slot value arrays of slots that left, for reuse
}

// slotMark is one cached slot: its start, its count when cached and its
// values, sorted (kept because a slot that leaves the range has usually
// been evicted from the store by then).
type slotMark struct {
	start, n int64
	vals     []float64
}

// Reset empties the cache, keeping its buffers.
func (c *SortedRange) Reset() {
	for _, m := range c.marks {
		if len(c.free) < MaxPooled {
			c.free = append(c.free, m.vals[:0])
		}
	}
	c.valid = false
	c.marks = c.marks[:0]
}

// Values returns the sorted values of s's samples in [from, to), which must
// be slot boundaries, and true; or nil and false when a slot of the range
// overflowed its cap or straddles from or to (the caller then uses
// CollectUniform). The returned slice is owned by c and valid until the
// next call, which overwrites it in place.
func (c *SortedRange) Values(s *Store, from, to int64) ([]float64, bool) {
	// The slots of the range, checked before the cache is touched.
	first, last := -1, len(s.Slots)
	for i := range s.Slots {
		sl := &s.Slots[i]
		if sl.Start+s.SlotWidth <= from {
			continue
		}
		if sl.Start >= to {
			last = i
			break
		}
		if sl.Start < from || sl.Start+s.SlotWidth > to || sl.N != int64(len(sl.Samples)) {
			c.Reset()
			return nil, false
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		first = last
	}
	slots := s.Slots[first:last]
	if !c.valid || !c.update(slots) {
		c.rebuild(slots)
	}
	return c.vals, true
}

// update moves vals from the cached marks to slots: it drops the values of
// the slots that left, merges in those of the slots that entered, and
// returns false (nothing changed) when a slot present in both changed its
// count or the change is as large as the array (a rebuild is as cheap).
func (c *SortedRange) update(slots []Slot) bool {
	c.rm, c.add = c.rm[:0], c.add[:0]
	i, j := 0, 0
	for i < len(c.marks) || j < len(slots) {
		switch {
		case j == len(slots) || (i < len(c.marks) && c.marks[i].start < slots[j].Start):
			c.rm = append(c.rm, c.marks[i].vals...)
			i++
		case i == len(c.marks) || slots[j].Start < c.marks[i].start:
			for _, x := range slots[j].Samples {
				c.add = append(c.add, x.V)
			}
			j++
		default:
			if c.marks[i].n != slots[j].N {
				return false
			}
			i++
			j++
		}
	}
	if len(c.add)+len(c.rm) >= len(c.vals) {
		return false
	}
	slices.Sort(c.rm)
	slices.Sort(c.add)
	c.vals = mergeMinusInPlace(c.vals, c.rm, c.add)
	c.setMarks(slots)
	return true
}

func (c *SortedRange) rebuild(slots []Slot) {
	c.vals = c.vals[:0]
	for i := range slots {
		for _, x := range slots[i].Samples {
			c.vals = append(c.vals, x.V)
		}
	}
	slices.Sort(c.vals)
	c.setMarks(slots)
	c.valid = true
}

// setMarks makes the marks those of slots, reusing the per-slot arrays of
// the slots still there.
func (c *SortedRange) setMarks(slots []Slot) {
	old := c.marks
	c.marks = c.spare[:0]
	defer func() { c.spare = old[:0] }()
	i := 0
	for j := range slots {
		for i < len(old) && old[i].start < slots[j].Start {
			c.free = append(c.free, old[i].vals[:0])
			i++
		}
		if i < len(old) && old[i].start == slots[j].Start && old[i].n == slots[j].N {
			c.marks = append(c.marks, old[i])
			i++
			continue
		}
		var vs []float64
		if n := len(c.free); n > 0 {
			vs, c.free = c.free[n-1], c.free[:n-1]
		}
		for _, x := range slots[j].Samples {
			vs = append(vs, x.V)
		}
		slices.Sort(vs)
		c.marks = append(c.marks, slotMark{start: slots[j].Start, n: slots[j].N, vals: vs})
	}
	for ; i < len(old); i++ {
		c.free = append(c.free, old[i].vals[:0])
	}
	if len(c.free) > MaxPooled {
		c.free = c.free[:MaxPooled]
	}
}

// mergeMinusInPlace is mergeMinus(nil, a, rm, add) written over a's array
// (grown when the result is longer): the same elements in the same order,
// without a second array of the window per cache (a copy of every drift
// window, per side and per key). First a − rm compacts forward (a write
// never passes the read), then add merges in from the back, an element of
// a before an equal one of add as mergeMinus puts them.
func mergeMinusInPlace(a, rm, add []float64) []float64 {
	k, r := 0, 0
	for i := range a {
		if r < len(rm) && a[i] == rm[r] {
			r++
			continue
		}
		a[k] = a[i]
		k++
	}
	n := k + len(add)
	a = slices.Grow(a[:k], len(add))[:n]
	i, j := k-1, len(add)-1
	for w := n - 1; j >= 0; w-- {
		if i >= 0 && a[i] > add[j] {
			a[w] = a[i]
			i--
		} else {
			a[w] = add[j]
			j--
		}
	}
	return a
}
