package stats

import (
	"encoding/binary"
	"math"
	"slices"
)

// MaxExceedanceCap is the largest ExceedanceStore capacity.
const MaxExceedanceCap = 1 << 22

// ExceedanceStore keeps, sorted, every value of a window that lies strictly
// above a floor, so that a tail refit reads the largest values without
// sorting the window: with n values in the window, if Len() >=
// TailSize(n, q) then Top() is exactly the Len() largest values and can be
// passed to TailEstimator.EstimateTop.
//
// The owner keeps it in step with its window: Add every value added,
// Remove every value evicted. When it holds capacity values, Add drops the
// smallest and raises the floor to it (the largest values are kept). When
// the window grows or its distribution shifts down so that it no longer
// covers the tail (Covers false), Rebuild it from the window.
//
// Costs: Add and Remove of a value above the floor are a binary search and
// a memmove of up to Len() floats (8 bytes each); values at or below the
// floor cost a comparison. No allocation after NewExceedanceStore. Not safe
// for concurrent use; serialises with MarshalBinary/UnmarshalBinary.
type ExceedanceStore struct {
	vals  []float64 // ascending, len <= cap(vals) == capacity
	floor float64   // every window value > floor is in vals; -Inf when nothing was dropped
}

// NewExceedanceStore returns an empty store (floor -Inf) holding at most
// capacity values, in [1, MaxExceedanceCap] (else ErrInvalidParameter).
// Size it at about twice TailSize of the largest expected window.
func NewExceedanceStore(capacity int) (*ExceedanceStore, error) {
	if capacity < 1 || capacity > MaxExceedanceCap {
		return nil, errf(ErrInvalidParameter, "exceedance store capacity %d: must be in [1, %d]", capacity, MaxExceedanceCap)
	}
	return &ExceedanceStore{vals: make([]float64, 0, capacity), floor: math.Inf(-1)}, nil
}

// Cap returns the capacity.
func (s *ExceedanceStore) Cap() int { return cap(s.vals) }

// Len returns the number of values held.
func (s *ExceedanceStore) Len() int { return len(s.vals) }

// Floor returns the floor: values at or below it are not held.
func (s *ExceedanceStore) Floor() float64 { return s.floor }

// Top returns the held values, ascending. The slice aliases the store: it
// is valid until the next Add, Remove or Rebuild and must not be modified.
func (s *ExceedanceStore) Top() []float64 { return s.vals }

// Covers reports whether Top holds the TailSize(n, q) largest values of a
// window of n values (so EstimateTop can use it).
func (s *ExceedanceStore) Covers(n int, q float64) bool {
	return n > 0 && len(s.vals) >= TailSize(n, q)
}

// Add records a value added to the window. NaN is ignored.
func (s *ExceedanceStore) Add(v float64) {
	if !(v > s.floor) {
		return
	}
	if len(s.vals) == cap(s.vals) {
		if v <= s.vals[0] {
			// v would be the new smallest, dropped at once.
			s.raiseFloor(v)
			return
		}
		s.raiseFloor(s.vals[0])
	}
	i, _ := slices.BinarySearch(s.vals, v)
	s.vals = slices.Insert(s.vals, i, v)
}

// raiseFloor sets the floor to f and drops every held value <= f.
func (s *ExceedanceStore) raiseFloor(f float64) {
	s.floor = max(s.floor, f)
	k, _ := slices.BinarySearch(s.vals, math.Nextafter(s.floor, math.Inf(1)))
	if k > 0 {
		s.vals = slices.Delete(s.vals, 0, k)
	}
}

// Remove records a value evicted from the window; it reports whether a copy
// was held (false for values at or below the floor).
func (s *ExceedanceStore) Remove(v float64) bool {
	if !(v > s.floor) {
		return false
	}
	i, found := slices.BinarySearch(s.vals, v)
	if !found {
		return false
	}
	s.vals = slices.Delete(s.vals, i, i+1)
	return true
}

// Rebuild refills the store from the window's values (any order, not
// modified): the keep largest (keep is clamped to the capacity), with the
// floor set to the next value below them (-Inf when all fit). scratch is
// working memory (grown as needed) and is returned for reuse.
func (s *ExceedanceStore) Rebuild(values []float64, keep int, scratch []float64) []float64 {
	keep = min(max(keep, 0), cap(s.vals))
	scratch = append(scratch[:0], values...)
	s.vals = s.vals[:0]
	n := len(scratch)
	if n <= keep {
		s.floor = math.Inf(-1)
		slices.Sort(scratch)
		s.vals = append(s.vals, scratch...)
		return scratch
	}
	k := n - keep - 1
	selectK(scratch, k)
	s.floor = scratch[k]
	top := scratch[k+1:]
	slices.Sort(top)
	first, _ := slices.BinarySearch(top, math.Nextafter(s.floor, math.Inf(1)))
	s.vals = append(s.vals, top[first:]...)
	return scratch
}

// Reset empties the store and resets the floor to -Inf.
func (s *ExceedanceStore) Reset() {
	s.vals = s.vals[:0]
	s.floor = math.Inf(-1)
}

const exceedanceCodecVersion = 1

// MarshalBinary encodes version, uvarint capacity, the floor's IEEE-754
// bits, uvarint count and the values (little-endian 64-bit words).
func (s *ExceedanceStore) MarshalBinary() ([]byte, error) {
	out := make([]byte, 0, 1+2*binary.MaxVarintLen64+8+8*len(s.vals))
	out = append(out, exceedanceCodecVersion)
	out = binary.AppendUvarint(out, uint64(cap(s.vals)))
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(s.floor))
	out = binary.AppendUvarint(out, uint64(len(s.vals)))
	for _, v := range s.vals {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
	}
	return out, nil
}

// UnmarshalBinary restores a store encoded by MarshalBinary. Errors
// (ErrInvalidInput): unknown version, capacity outside
// [1, MaxExceedanceCap], more values than the capacity, values not sorted
// or not above the floor, truncated or trailing bytes.
func (s *ExceedanceStore) UnmarshalBinary(data []byte) error {
	if len(data) == 0 || data[0] != exceedanceCodecVersion {
		return errf(ErrInvalidInput, "exceedance store encoding: unknown version")
	}
	p := data[1:]
	c, k := binary.Uvarint(p)
	if k <= 0 || c < 1 || c > MaxExceedanceCap {
		return errf(ErrInvalidInput, "exceedance store encoding: bad capacity")
	}
	p = p[k:]
	if len(p) < 8 {
		return errf(ErrInvalidInput, "exceedance store encoding: truncated floor")
	}
	floor := math.Float64frombits(binary.LittleEndian.Uint64(p))
	p = p[8:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > c {
		return errf(ErrInvalidInput, "exceedance store encoding: bad count")
	}
	p = p[k:]
	if uint64(len(p)) != 8*n {
		return errf(ErrInvalidInput, "exceedance store encoding: %d value bytes for %d values", len(p), n)
	}
	vals := make([]float64, n, c)
	for i := range vals {
		vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
		if !(vals[i] > floor) || (i > 0 && vals[i] < vals[i-1]) {
			return errf(ErrInvalidInput, "exceedance store encoding: value %d not sorted above the floor", i)
		}
	}
	s.vals, s.floor = vals, floor
	return nil
}
