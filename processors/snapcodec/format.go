package snapcodec

import "fmt"

// Format is one processor's snapshot layout: the header every snapshot
// starts with, and the sentinel every decoding error wraps (besides
// ErrDamaged).
type Format struct {
	Name    string // e.g. "fusebox.tail"
	Version uint8  // bumped whenever the layout after the header changes
	Err     error  // the processor's ErrSnapshot / ErrCorrupt
}

// Marshal returns the header followed by what body writes.
func (f Format) Marshal(body func(*Encoder)) []byte {
	e := NewEncoder(nil)
	e.Header(f.Name, f.Version)
	body(e)
	return e.Bytes()
}

// SizeHint is the size of a processor's previous snapshot (bytes), which
// the processor keeps so that MarshalSized makes its next one in a single
// allocation. The zero value knows nothing yet. It never changes what a
// snapshot holds, only where its bytes are first written.
type SizeHint struct{ last int }

// MarshalSized is Marshal with room made up front for the previous
// snapshot's size and an eighth more, h updated to this one's size. A large
// snapshot otherwise grows through a series of doublings that copy it about
// once more and fault in twice its memory (at 100k keys a processor's
// snapshot is hundreds of MB). The returned bytes are Marshal's exactly.
func (f Format) MarshalSized(h *SizeHint, body func(*Encoder)) []byte {
	var e *Encoder
	if h.last > 0 {
		e = NewEncoder(make([]byte, 0, h.last+h.last/8))
	} else {
		e = NewEncoder(nil)
	}
	e.Header(f.Name, f.Version)
	body(e)
	h.last = len(e.buf)
	return e.Bytes()
}

// Unmarshal checks the header of b, lets body read the rest, and returns
// nil when body consumed every byte without an error; otherwise an error
// wrapping f.Err and ErrDamaged that says what was wrong and where. body
// should build the new state aside and commit it only when the returned
// error is nil.
func (f Format) Unmarshal(b []byte, body func(*Decoder)) error {
	d := NewDecoder(b)
	d.Header(f.Name, f.Version)
	if d.Err() == nil {
		body(d)
	}
	if err := d.Finish(); err != nil {
		return fmt.Errorf("%w: %w", f.Err, err)
	}
	return nil
}
