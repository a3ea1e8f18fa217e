package stats

import (
	"encoding/binary"
	"math"
)

// TimedValue is a value with its event time.
type TimedValue struct {
	T int64   // event time, Unix nanoseconds (any monotone clock works)
	V float64 // the value, in the caller's unit
}

// MaxWindowCap is the largest Window capacity (16M values, 256 MiB).
const MaxWindowCap = 1 << 24

// Window is a bounded FIFO of recent time-stamped values: a ring buffer of
// fixed capacity allocated once by NewWindow. Add is O(1) and never
// allocates; when the window is full it evicts (and returns) the oldest
// value. Eviction by time (EvictBefore) pops from the oldest end while the
// oldest value's time is before a cutoff, so it assumes values arrive in
// roughly event-time order: a late value with an old time leaves when it
// reaches the oldest end. Memory: 16 bytes per slot of capacity.
//
// A Window is not safe for concurrent use. It serialises with
// MarshalBinary/UnmarshalBinary (capacity and contents, oldest first).
type Window struct {
	buf  []TimedValue // len(buf) is the capacity
	head int          // index of the oldest value
	n    int          // values held
}

// NewWindow returns an empty window of the given capacity, in
// [1, MaxWindowCap] (else ErrInvalidParameter).
func NewWindow(capacity int) (*Window, error) {
	if capacity < 1 || capacity > MaxWindowCap {
		return nil, errf(ErrInvalidParameter, "window capacity %d: must be in [1, %d]", capacity, MaxWindowCap)
	}
	return &Window{buf: make([]TimedValue, capacity)}, nil
}

// Cap returns the capacity; Len the number of values held.
func (w *Window) Cap() int { return len(w.buf) }

// Len returns the number of values held.
func (w *Window) Len() int { return w.n }

// Add appends (t, v) as the newest value. When the window was full, the
// oldest value is overwritten and returned with evicted = true, so a caller
// can keep derived state (an ExceedanceStore, a sum) in step.
func (w *Window) Add(t int64, v float64) (old TimedValue, evicted bool) {
	c := len(w.buf)
	if w.n == c {
		old = w.buf[w.head]
		w.buf[w.head] = TimedValue{t, v}
		w.head++
		if w.head == c {
			w.head = 0
		}
		return old, true
	}
	i := w.head + w.n
	if i >= c {
		i -= c
	}
	w.buf[i] = TimedValue{t, v}
	w.n++
	return TimedValue{}, false
}

// EvictBefore removes and returns the oldest value if its time is before
// cutoff; ok is false (and nothing changes) otherwise. Call it in a loop to
// drop everything older than a window start.
func (w *Window) EvictBefore(cutoff int64) (TimedValue, bool) {
	if w.n == 0 || w.buf[w.head].T >= cutoff {
		return TimedValue{}, false
	}
	return w.popOldest(), true
}

// PopOldest removes and returns the oldest value; ok is false when empty.
func (w *Window) PopOldest() (TimedValue, bool) {
	if w.n == 0 {
		return TimedValue{}, false
	}
	return w.popOldest(), true
}

func (w *Window) popOldest() TimedValue {
	v := w.buf[w.head]
	w.head++
	if w.head == len(w.buf) {
		w.head = 0
	}
	w.n--
	return v
}

// At returns the i-th value, 0 being the oldest (panics if out of range,
// like a slice index).
func (w *Window) At(i int) TimedValue {
	if i < 0 || i >= w.n {
		panic("stats: Window.At index out of range")
	}
	j := w.head + i
	if j >= len(w.buf) {
		j -= len(w.buf)
	}
	return w.buf[j]
}

// Oldest returns the oldest value; ok is false when empty.
func (w *Window) Oldest() (TimedValue, bool) {
	if w.n == 0 {
		return TimedValue{}, false
	}
	return w.buf[w.head], true
}

// Newest returns the newest value; ok is false when empty.
func (w *Window) Newest() (TimedValue, bool) {
	if w.n == 0 {
		return TimedValue{}, false
	}
	return w.At(w.n - 1), true
}

// AppendValues appends the values, oldest first, to dst and returns it
// (no allocation when dst has room).
func (w *Window) AppendValues(dst []float64) []float64 {
	a, b := w.segments()
	for _, tv := range a {
		dst = append(dst, tv.V)
	}
	for _, tv := range b {
		dst = append(dst, tv.V)
	}
	return dst
}

// AppendTimed appends the time-stamped values, oldest first, to dst.
func (w *Window) AppendTimed(dst []TimedValue) []TimedValue {
	a, b := w.segments()
	dst = append(dst, a...)
	return append(dst, b...)
}

// segments returns the contents as two slices of the ring, oldest first.
func (w *Window) segments() (a, b []TimedValue) {
	end := w.head + w.n
	if end <= len(w.buf) {
		return w.buf[w.head:end], nil
	}
	return w.buf[w.head:], w.buf[:end-len(w.buf)]
}

// Reset empties the window, keeping its capacity.
func (w *Window) Reset() { w.head, w.n = 0, 0 }

const windowCodecVersion = 1

// MarshalBinary encodes the capacity and the values oldest first:
// version byte, uvarint capacity, uvarint count, then per value the time and
// the IEEE-754 bits of the value as little-endian 64-bit words.
func (w *Window) MarshalBinary() ([]byte, error) {
	out := make([]byte, 0, 1+2*binary.MaxVarintLen64+16*w.n)
	out = append(out, windowCodecVersion)
	out = binary.AppendUvarint(out, uint64(len(w.buf)))
	out = binary.AppendUvarint(out, uint64(w.n))
	a, b := w.segments()
	for _, s := range [][]TimedValue{a, b} {
		for _, tv := range s {
			out = binary.LittleEndian.AppendUint64(out, uint64(tv.T))
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(tv.V))
		}
	}
	return out, nil
}

// UnmarshalBinary restores a window encoded by MarshalBinary, replacing the
// receiver's contents and capacity. Errors (ErrInvalidInput): an unknown
// version, a capacity outside [1, MaxWindowCap], more values than the
// capacity, or truncated or trailing bytes.
func (w *Window) UnmarshalBinary(data []byte) error {
	if len(data) == 0 || data[0] != windowCodecVersion {
		return errf(ErrInvalidInput, "window encoding: unknown version")
	}
	p := data[1:]
	c, k := binary.Uvarint(p)
	if k <= 0 || c < 1 || c > MaxWindowCap {
		return errf(ErrInvalidInput, "window encoding: bad capacity")
	}
	p = p[k:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > c {
		return errf(ErrInvalidInput, "window encoding: bad count")
	}
	p = p[k:]
	if uint64(len(p)) != 16*n {
		return errf(ErrInvalidInput, "window encoding: %d value bytes for %d values", len(p), n)
	}
	buf := make([]TimedValue, c)
	for i := range int(n) {
		buf[i] = TimedValue{
			T: int64(binary.LittleEndian.Uint64(p[16*i:])),
			V: math.Float64frombits(binary.LittleEndian.Uint64(p[16*i+8:])),
		}
	}
	w.buf, w.head, w.n = buf, 0, int(n)
	return nil
}
