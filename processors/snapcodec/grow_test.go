package snapcodec

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestEncoderGrowsByDoubling: the bytes are those of plain appends (Blob
// exactly String's), and writing n bytes field by field reallocates the
// buffer O(log n) times — ~20 times for 16 MB, where append's quarter
// growth of large slices took ~60 and copied the buffer ~4 times over.
func TestEncoderGrowsByDoubling(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var e Encoder
	var want []byte
	grows, lastCap := 0, 0
	for len(want) < 16<<20 {
		switch r.IntN(5) {
		case 0:
			v := r.Uint64()
			e.U64(v)
			want = binary.LittleEndian.AppendUint64(want, v)
		case 1:
			v := r.Uint32()
			e.U32(v)
			want = binary.LittleEndian.AppendUint32(want, v)
		case 2:
			e.U8(7)
			want = append(want, 7)
		case 3:
			p := make([]byte, r.IntN(3000))
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			if r.IntN(2) == 0 {
				e.Blob(p)
			} else {
				e.String(string(p))
			}
			want = binary.LittleEndian.AppendUint32(want, uint32(len(p)))
			want = append(want, p...)
		case 4:
			e.Raw([]byte{1, 2, 3})
			want = append(want, 1, 2, 3)
		}
		if c := cap(e.Bytes()); c != lastCap {
			grows, lastCap = grows+1, c
		}
	}
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatal("the encoder's bytes differ from the appended fields")
	}
	if grows > 14 { // 4 KiB doubled to 16 MiB: 13 allocations
		t.Fatalf("%d reallocations for %d bytes, want at most 14 (doubling from 4 KiB)", grows, len(want))
	}
	var g Encoder
	g.Grow(1 << 20)
	c := cap(g.Bytes())
	for range 1 << 17 {
		g.U64(1)
	}
	if c < 1<<20 || cap(g.Bytes()) != c {
		t.Fatalf("after Grow(1 MiB) and 1 MiB of writes the capacity went %d -> %d, want one allocation", c, cap(g.Bytes()))
	}
}

// TestMarshalSizedIsOneAllocation: MarshalSized writes Marshal's bytes, and
// once it knows the previous size, a snapshot of about that size (here 2%
// larger) is written without the buffer growing: one allocation, where
// Marshal's doublings from 4 KiB take ~10 for 4 MB.
func TestMarshalSizedIsOneAllocation(t *testing.T) {
	f := Format{Name: "fusebox.test", Version: 3}
	n := 1 << 19 // eight-byte fields: 4 MiB
	body := func(e *Encoder) {
		for i := range n {
			e.U64(uint64(i))
		}
	}
	var h SizeHint
	first := f.MarshalSized(&h, body)
	if want := f.Marshal(body); !bytes.Equal(first, want) {
		t.Fatal("MarshalSized's first snapshot differs from Marshal's")
	}
	if h.last != len(first) {
		t.Fatalf("the hint holds %d bytes after a snapshot of %d", h.last, len(first))
	}
	n += n / 50
	var again []byte
	allocs := testing.AllocsPerRun(1, func() { again = f.MarshalSized(&h, body) })
	if !bytes.Equal(again, f.Marshal(body)) {
		t.Fatal("MarshalSized's second snapshot differs from Marshal's")
	}
	if allocs > 2 { // the buffer, and the encoder if it escapes
		t.Fatalf("MarshalSized with a hint allocated %v times for %d bytes, want at most 2", allocs, len(again))
	}
	if plain := testing.AllocsPerRun(1, func() { f.Marshal(body) }); plain < 5 {
		t.Fatalf("Marshal allocated only %v times for %d bytes: the test no longer shows what the hint saves", plain, len(again))
	}
}
