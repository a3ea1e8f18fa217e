// Package snapcodec is the binary layout of the processors' state snapshots
// (processors.Processor.MarshalBinary): a format header (name and version),
// then little-endian fixed-width integers, IEEE-754 float64 bits, strings
// as a uint32 byte length followed by the bytes, and counts as uint32.
//
// Encoder never fails. Decoder never panics on damaged input: the first
// problem — too few bytes left, a count that the remaining bytes cannot
// hold, a wrong header, a bad boolean, trailing bytes, or a check of the
// caller's (Failf) — is recorded, every later read returns a zero value,
// and Err (or Finish) reports it. A decoding function therefore reads
// straight through and checks the error where it matters: before acting on
// a value and once at the end. Every error the decoder records wraps
// ErrDamaged; processors wrap it again in their own sentinel.
//
// Equal inputs give equal bytes: the encoder has no maps and no padding, so
// a processor that writes its keys and entries in a canonical order gets
// snapshots that compare byte for byte.
//
// A processor snapshots every checkpoint interval, and its state changes
// little between two: it keeps a SizeHint and writes with
// Format.MarshalSized, so every snapshot after its first is written into
// one allocation of about the right size.
package snapcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrDamaged is wrapped by every error a Decoder records.
var ErrDamaged = errors.New("snapcodec: damaged snapshot")

// KeySize is the fewest bytes an encoded schemas.Key takes (four empty
// strings), for Decoder.Count.
const KeySize = 16

// Encoder appends fields to a byte slice. The zero value is ready to use
// and starts from an empty slice.
//
// It grows its slice itself, doubling it (at least minGrow bytes), rather
// than leaving it to append: append grows a large slice by a quarter, so
// a snapshot of n bytes was copied ~4n times on its way there (a 2 GB
// worker checkpoint at 100k keys spent most of its marshal CPU in
// growslice and memmove); doubling copies it less than n times, at the
// cost of up to n bytes of unused capacity until the snapshot is written.
type Encoder struct{ buf []byte }

// minGrow is the smallest capacity Encoder grows its slice to (bytes).
const minGrow = 4096

// room makes room for n more bytes.
func (e *Encoder) room(n int) {
	if len(e.buf)+n <= cap(e.buf) {
		return
	}
	nb := make([]byte, len(e.buf), max(2*cap(e.buf), len(e.buf)+n, minGrow))
	copy(nb, e.buf)
	e.buf = nb
}

// NewEncoder returns an Encoder that appends to dst.
func NewEncoder(dst []byte) *Encoder { return &Encoder{buf: dst} }

// Bytes returns everything written so far (dst of NewEncoder included).
func (e *Encoder) Bytes() []byte { return e.buf }

// Header writes the format tag: format as a String, then version.
func (e *Encoder) Header(format string, version uint8) {
	e.String(format)
	e.U8(version)
}

// U8 writes one byte.
func (e *Encoder) U8(v uint8) {
	e.room(1)
	e.buf = append(e.buf, v)
}

// Bool writes 1 for true, 0 for false.
func (e *Encoder) Bool(v bool) {
	if v {
		e.U8(1)
	} else {
		e.U8(0)
	}
}

// U32 writes 4 bytes, little-endian.
func (e *Encoder) U32(v uint32) {
	e.room(4)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, v)
}

// U64 writes 8 bytes, little-endian.
func (e *Encoder) U64(v uint64) {
	e.room(8)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, v)
}

// I64 writes v's two's-complement bits as U64.
func (e *Encoder) I64(v int64) { e.U64(uint64(v)) }

// F64 writes v's IEEE-754 bits as U64 (NaN payloads and -0 survive).
func (e *Encoder) F64(v float64) { e.U64(math.Float64bits(v)) }

// Count writes a number of entries to follow, as U32. n must be in
// [0, 2^32): every processor caps its state far below that.
func (e *Encoder) Count(n int) { e.U32(uint32(n)) }

// String writes len(s) as U32, then the bytes of s.
func (e *Encoder) String(s string) {
	e.U32(uint32(len(s)))
	e.room(len(s))
	e.buf = append(e.buf, s...)
}

// Blob writes p as String(string(p)) does, without converting p to a
// string first (a copy of p: a worker's checkpoint holds each SLO's
// snapshot as a Blob).
func (e *Encoder) Blob(p []byte) {
	e.U32(uint32(len(p)))
	e.room(len(p))
	e.buf = append(e.buf, p...)
}

// Grow makes room for n more bytes at once, for a caller that knows the
// size of what it is about to write.
func (e *Encoder) Grow(n int) { e.room(n) }

// Raw writes p as is, without a length: for fixed-size fields such as
// trace ids, which the decoder reads back with Decoder.Raw(len).
func (e *Encoder) Raw(p []byte) {
	e.room(len(p))
	e.buf = append(e.buf, p...)
}

// Key writes the four dimensions of k as Strings (tenant, service, model,
// variant): no escaping, so every key round-trips exactly.
func (e *Encoder) Key(k schemas.Key) {
	e.String(k.Tenant)
	e.String(k.Service)
	e.String(k.Model)
	e.String(k.Variant)
}

// Decoder reads fields from a snapshot; see the package comment for its
// error handling.
type Decoder struct {
	b   []byte // not yet read
	off int    // bytes read so far, for error messages
	err error
}

// NewDecoder returns a Decoder reading b. It does not copy b; Raw returns
// sub-slices of it.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err is the first error recorded, nil when none.
func (d *Decoder) Err() error { return d.err }

// Remaining is the number of bytes not read yet.
func (d *Decoder) Remaining() int { return len(d.b) }

// Rest returns the bytes not read yet, for a caller that reads a prefix
// with the Decoder and the rest by other means.
func (d *Decoder) Rest() []byte { return d.b }

// Failf records an error (when none is recorded yet), wrapping ErrDamaged,
// with the byte offset reached: for the caller's own checks of decoded
// values (a count above a configured cap, a slot width from another
// configuration, a key twice).
func (d *Decoder) Failf(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w at byte %d: %s", ErrDamaged, d.off, fmt.Sprintf(format, args...))
	}
}

// Finish records an error when bytes are left over and returns Err.
func (d *Decoder) Finish() error {
	if d.err == nil && len(d.b) != 0 {
		d.Failf("%d trailing bytes", len(d.b))
	}
	return d.err
}

// take returns the next n bytes, or nil after recording an error when
// fewer are left (or an error is already recorded).
func (d *Decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.Failf("%s needs %d bytes, %d left", what, n, len(d.b))
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	d.off += n
	return p
}

// Header reads a format tag and records an error unless it names format at
// version.
func (d *Decoder) Header(format string, version uint8) {
	n := int(d.U32())
	if d.err != nil {
		return
	}
	if n != len(format) || n > len(d.b) || string(d.b[:n]) != format {
		d.Failf("not a %q snapshot", format)
		return
	}
	d.take(n, "format")
	if v := d.U8(); d.err == nil && v != version {
		d.Failf("%s snapshot format version %d, want %d", format, v, version)
	}
}

// U8 reads one byte.
func (d *Decoder) U8() uint8 {
	p := d.take(1, "u8")
	if p == nil {
		return 0
	}
	return p[0]
}

// Bool reads a byte that must be 0 or 1.
func (d *Decoder) Bool() bool {
	v := d.U8()
	if v > 1 {
		d.Failf("boolean byte %d", v)
		return false
	}
	return v == 1
}

// U32 reads 4 bytes, little-endian.
func (d *Decoder) U32() uint32 {
	p := d.take(4, "u32")
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

// U64 reads 8 bytes, little-endian.
func (d *Decoder) U64() uint64 {
	p := d.take(8, "u64")
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// I64 reads what Encoder.I64 wrote.
func (d *Decoder) I64() int64 { return int64(d.U64()) }

// F64 reads what Encoder.F64 wrote.
func (d *Decoder) F64() float64 { return math.Float64frombits(d.U64()) }

// Count reads a count written by Encoder.Count and records an error (and
// returns 0) when the remaining bytes cannot hold that many entries of at
// least minSize bytes each, so that a damaged count never sizes a huge
// allocation. minSize below 1 is taken as 1.
func (d *Decoder) Count(minSize int) int {
	n := int(d.U32())
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if n < 0 || n > len(d.b)/minSize { // n < 0: a count above MaxInt on 32-bit platforms
		d.Failf("count %d of entries of at least %d bytes, %d bytes left", n, minSize, len(d.b))
		return 0
	}
	return n
}

// String reads what Encoder.String wrote.
func (d *Decoder) String() string {
	n := int(d.U32())
	return string(d.take(n, "string"))
}

// Raw reads n bytes written by Encoder.Raw. The result aliases the input;
// it is nil after an error.
func (d *Decoder) Raw(n int) []byte { return d.take(n, "raw bytes") }

// Key reads what Encoder.Key wrote.
func (d *Decoder) Key() schemas.Key {
	return schemas.Key{Tenant: d.String(), Service: d.String(), Model: d.String(), Variant: d.String()}
}
