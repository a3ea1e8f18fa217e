package engine

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// ErrCorruptSnapshot is returned when a checkpoint cannot be decoded.
var ErrCorruptSnapshot = errors.New("engine: corrupt snapshot")

// encoder and decoder write and read the little-endian snapshot format of
// the worker's own state; processors encode their own sections.
type encoder struct{ b []byte }

func (e *encoder) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) i64(v int64)  { e.b = binary.LittleEndian.AppendUint64(e.b, uint64(v)) }
func (e *encoder) str(s string) { e.u32(uint32(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bytes(p []byte) {
	e.u32(uint32(len(p)))
	e.b = append(e.b, p...)
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = errors.Join(ErrCorruptSnapshot, errors.New("short read of "+what+" with "+strconv.Itoa(len(d.b))+" bytes left"))
	}
}

func (d *decoder) u32() uint32 {
	if len(d.b) < 4 {
		d.fail("u32")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) i64() int64 {
	if len(d.b) < 8 {
		d.fail("i64")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return int64(v)
}

func (d *decoder) bytes() []byte {
	n := int(d.u32())
	if d.err != nil || n > len(d.b) {
		d.fail("bytes")
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) str() string { return string(d.bytes()) }
