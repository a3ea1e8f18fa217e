package snapcodec

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// sample writes one of every field kind.
func sample() []byte {
	e := NewEncoder([]byte("prefix"))
	e.Header("test", 3)
	e.U8(7)
	e.Bool(true)
	e.Bool(false)
	e.U32(math.MaxUint32)
	e.U64(math.MaxUint64)
	e.I64(-42)
	e.F64(math.Copysign(0, -1))
	e.F64(math.Inf(1))
	e.String("")
	e.String("a/b%c\x00")
	e.Raw([]byte{1, 2, 3})
	e.Count(2)
	e.Key(schemas.Key{Tenant: "t/1", Service: "", Model: "m", Variant: "*"})
	e.Key(schemas.Key{})
	return e.Bytes()[len("prefix"):]
}

func TestRoundTrip(t *testing.T) {
	d := NewDecoder(sample())
	d.Header("test", 3)
	if v := d.U8(); v != 7 {
		t.Errorf("U8 %d", v)
	}
	if a, b := d.Bool(), d.Bool(); !a || b {
		t.Errorf("Bool %v %v", a, b)
	}
	if v := d.U32(); v != math.MaxUint32 {
		t.Errorf("U32 %d", v)
	}
	if v := d.U64(); v != math.MaxUint64 {
		t.Errorf("U64 %d", v)
	}
	if v := d.I64(); v != -42 {
		t.Errorf("I64 %d", v)
	}
	if v := d.F64(); v != 0 || !math.Signbit(v) {
		t.Errorf("F64 %v: want -0", v)
	}
	if v := d.F64(); !math.IsInf(v, 1) {
		t.Errorf("F64 %v", v)
	}
	if a, b := d.String(), d.String(); a != "" || b != "a/b%c\x00" {
		t.Errorf("String %q %q", a, b)
	}
	if v := d.Raw(3); string(v) != "\x01\x02\x03" {
		t.Errorf("Raw %v", v)
	}
	if n := d.Count(KeySize); n != 2 {
		t.Errorf("Count %d", n)
	}
	if k := d.Key(); k != (schemas.Key{Tenant: "t/1", Model: "m", Variant: "*"}) {
		t.Errorf("Key %+v", k)
	}
	if k := d.Key(); k != (schemas.Key{}) {
		t.Errorf("Key %+v", k)
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
}

// Every truncation of a valid snapshot is reported, never a panic, and
// reads after the error return zero values.
func TestTruncationIsAnError(t *testing.T) {
	full := sample()
	for cut := 0; cut < len(full); cut++ {
		d := NewDecoder(full[:cut])
		d.Header("test", 3)
		d.U8()
		d.Bool()
		d.Bool()
		d.U32()
		d.U64()
		d.I64()
		d.F64()
		d.F64()
		_ = d.String()
		_ = d.String()
		d.Raw(3)
		n := d.Count(KeySize)
		for range n {
			d.Key()
		}
		err := d.Finish()
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("cut at %d of %d bytes: %v", cut, len(full), err)
		}
		if d.U64() != 0 || d.String() != "" || d.Raw(1) != nil || d.Key() != (schemas.Key{}) {
			t.Fatalf("cut at %d: reads after an error return data", cut)
		}
	}
}

func TestChecks(t *testing.T) {
	enc := func(f func(*Encoder)) []byte {
		var e Encoder
		f(&e)
		return e.Bytes()
	}
	cases := []struct {
		name string
		b    []byte
		read func(*Decoder)
		want string
	}{
		{"other format", enc(func(e *Encoder) { e.Header("tail", 1) }), func(d *Decoder) { d.Header("drift", 1) }, `not a "drift" snapshot`},
		{"format prefix", enc(func(e *Encoder) { e.Header("tai", 1) }), func(d *Decoder) { d.Header("tail", 1) }, `not a "tail" snapshot`},
		{"other version", enc(func(e *Encoder) { e.Header("tail", 1) }), func(d *Decoder) { d.Header("tail", 2) }, "version 1, want 2"},
		{"bool", []byte{2}, func(d *Decoder) { d.Bool() }, "boolean byte 2"},
		{"count too large", enc(func(e *Encoder) { e.Count(3); e.U64(0) }), func(d *Decoder) { d.Count(4) }, "count 3 of entries of at least 4 bytes, 8 bytes left"},
		{"string too long", enc(func(e *Encoder) { e.U32(5); e.U32(0) }), func(d *Decoder) { _ = d.String() }, "string needs 5 bytes, 4 left"},
		{"trailing", []byte{1, 2}, func(d *Decoder) { d.U8() }, "1 trailing bytes"},
		{"caller check", []byte{9}, func(d *Decoder) { d.Failf("cap %d", d.U8()) }, "at byte 1: cap 9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.b)
			tc.read(d)
			err := d.Finish()
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrDamaged naming %q", err, tc.want)
			}
		})
	}
	// The first error wins.
	d := NewDecoder(nil)
	d.Failf("first")
	d.Failf("second")
	if err := d.Err(); !strings.Contains(err.Error(), "first") || strings.Contains(err.Error(), "second") {
		t.Fatalf("got %v", err)
	}
}

func TestKeyed(t *testing.T) {
	a, b := schemas.Key{Tenant: "a"}, schemas.Key{Tenant: "b", Variant: "v"}
	m := map[schemas.Key]int64{a: 1, b: -2}
	var e Encoder
	PutKeyed(&e, []schemas.Key{b, a}, m, func(v int64, e *Encoder) { e.I64(v) })
	get := func(d *Decoder, _ schemas.Key) int64 { return d.I64() }
	d := NewDecoder(e.Bytes())
	got := GetKeyed(d, 8, get)
	if err := d.Finish(); err != nil || len(got) != 2 || got[a] != 1 || got[b] != -2 {
		t.Fatalf("got %v, %v", got, err)
	}
	// A key twice, and a value the reader rejects.
	var dup Encoder
	PutKeyed(&dup, []schemas.Key{a, a}, m, func(v int64, e *Encoder) { e.I64(v) })
	d = NewDecoder(dup.Bytes())
	if got := GetKeyed(d, 8, get); got != nil || !strings.Contains(d.Err().Error(), `key "a///" twice`) {
		t.Fatalf("duplicate key: %v, %v", got, d.Err())
	}
	d = NewDecoder(e.Bytes())
	got = GetKeyed(d, 8, func(d *Decoder, k schemas.Key) int64 {
		v := d.I64()
		if v < 0 {
			d.Failf("key %q: negative %d", k.String(), v)
		}
		return v
	})
	if got != nil || !errors.Is(d.Err(), ErrDamaged) || !strings.HasPrefix(d.Err().Error(), `key "b///v": `) {
		t.Fatalf("rejected value: %v, %v", got, d.Err())
	}
}

func TestFormat(t *testing.T) {
	errMine := errors.New("mine")
	f := Format{Name: "fusebox.test", Version: 2, Err: errMine}
	snap := f.Marshal(func(e *Encoder) { e.U32(7) })
	var got uint32
	if err := f.Unmarshal(snap, func(d *Decoder) { got = d.U32() }); err != nil || got != 7 {
		t.Fatalf("got %d, %v", got, err)
	}
	called := false
	other := Format{Name: "fusebox.other", Version: 2, Err: errMine}
	if err := other.Unmarshal(snap, func(*Decoder) { called = true }); !errors.Is(err, errMine) || !errors.Is(err, ErrDamaged) || called {
		t.Fatalf("other format: %v (body called %v)", err, called)
	}
	if err := f.Unmarshal(snap, func(*Decoder) {}); !errors.Is(err, errMine) || !strings.Contains(err.Error(), "4 trailing bytes") {
		t.Fatalf("unread bytes: %v", err)
	}
}
