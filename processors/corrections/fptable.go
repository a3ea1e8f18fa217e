package corrections

import "hash/maphash"

// fpTable maps fingerprints (non-zero uint64) to the head of a list of
// index entries (int32): open addressing with linear probing over a
// power-of-two array of 12-byte slots, grown at 3/4 load, deletion by
// backward shift (no tombstones). It replaces a Go map for the join
// index's three lists: a span's insertion needs the old head and sets the
// new one, which is one probe here (swap) and two in a map, and the slots
// hold no pointers.
//
// A slot's position is a remix of the fingerprint with salt, a random
// per-table value (hash/maphash's seed, as Go maps seed theirs): the
// fingerprint is a fixed, public function of the ids, so indexing by its
// low bits would let a sender choose ids whose fingerprints share them and
// build one probe run thousands of slots long (every insert and eviction
// on it O(run)). Positions affect neither verdicts nor snapshots (the
// snapshot writes entries sorted, not in table order).
type fpTable struct {
	slots []fpSlot
	n     int
	salt  uint64
}

func newFPTable() fpTable { return fpTable{salt: maphash.Bytes(maphash.MakeSeed(), nil)} }

// home is k's first probe position in a table of mask+1 slots.
func (t *fpTable) home(k, mask uint64) uint64 { return mum(k^t.salt, 0x9e3779b97f4a7c15) & mask }

// fpSlot is a fingerprint (0: empty) and its value in 12 bytes: the
// fingerprint as two 32-bit halves, so the slot has 4-byte alignment (with
// a uint64 field it would be padded to 16, a quarter of the tables'
// memory).
type fpSlot struct {
	lo, hi uint32
	v      int32
}

func (s *fpSlot) key() uint64 { return uint64(s.lo) | uint64(s.hi)<<32 }

func newSlot(k uint64, v int32) fpSlot { return fpSlot{lo: uint32(k), hi: uint32(k >> 32), v: v} }

func (t *fpTable) len() int { return t.n }

// get returns the value of k and whether it is present.
func (t *fpTable) get(k uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k, mask); ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.key() {
		case k:
			return s.v, true
		case 0:
			return 0, false
		}
	}
}

// swap sets k to v and returns the previous value and whether there was
// one.
func (t *fpTable) swap(k uint64, v int32) (int32, bool) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k, mask); ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.key() {
		case k:
			old := s.v
			s.v = v
			return old, true
		case 0:
			*s = newSlot(k, v)
			t.n++
			return 0, false
		}
	}
}

// set sets the value of a present k (a list's new head).
func (t *fpTable) set(k uint64, v int32) { t.swap(k, v) }

// del removes k if present, shifting later entries of its probe run back
// so that lookups need no tombstones.
func (t *fpTable) del(k uint64) {
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(k, mask)
	for ; t.slots[i].key() != k; i = (i + 1) & mask {
		if t.slots[i].key() == 0 {
			return
		}
	}
	for j := (i + 1) & mask; t.slots[j].key() != 0; j = (j + 1) & mask {
		// The entry at j may move to the hole at i when its home slot is
		// not in (i, j] (cyclically).
		if home := t.home(t.slots[j].key(), mask); (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = fpSlot{}
	t.n--
	if len(t.slots) > 64 && 8*t.n < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

func (t *fpTable) grow() {
	if len(t.slots) == 0 {
		t.slots = make([]fpSlot, 16)
		return
	}
	t.resize(2 * len(t.slots))
}

func (t *fpTable) resize(size int) {
	old := t.slots
	t.slots = make([]fpSlot, size)
	mask := uint64(size - 1)
	for _, s := range old {
		if s.key() == 0 {
			continue
		}
		i := t.home(s.key(), mask)
		for t.slots[i].key() != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
