package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Resume checks that a snapshot taken mid-stream continues exactly: it
// drives a fresh processor over the events before cut (boundaries from
// from up to cut's interval), snapshots it, restores the snapshot into
// another fresh processor — which must marshal to the same bytes — drives
// both over the rest up to to, and fails unless both give the same
// verdicts and the split run gives whole, the verdicts of an uninterrupted
// run over evs. It returns the restored processor's verdicts.
func Resume(t *testing.T, newP func() processors.Processor, evs []Event, from, to, cut int64, whole []schemas.Verdict) []schemas.Verdict {
	t.Helper()
	var before, after []Event
	for _, e := range evs {
		if e.T < cut {
			before = append(before, e)
		} else {
			after = append(after, e)
		}
	}
	p := newP()
	b := from + processors.FloorTo(cut-from, int64(p.Interval()))
	first := DriveEvents(t, p, before, from, b)
	snap, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q := newP()
	if err := q.UnmarshalBinary(snap); err != nil {
		t.Fatalf("cut at %d: restore: %v", cut, err)
	}
	if again, _ := q.MarshalBinary(); !bytes.Equal(snap, again) {
		t.Fatalf("cut at %d: restored state marshals to different bytes", cut)
	}
	restA := DriveEvents(t, p, after, b, to)
	restB := DriveEvents(t, q, after, b, to)
	if !reflect.DeepEqual(restA, restB) {
		t.Fatalf("cut at %d: restored processor diverged", cut)
	}
	if !reflect.DeepEqual(append(first, restA...), whole) {
		t.Fatalf("cut at %d: split run differs from the uninterrupted one", cut)
	}
	return restB
}

// RejectsDamage fails unless newP() rejects, with an error wrapping
// sentinel, an empty snapshot, snap with a byte appended, and truncations
// of snap at about 50 places spread over its length (every byte for short
// ones).
func RejectsDamage(t *testing.T, newP func() processors.Processor, snap []byte, sentinel error) {
	t.Helper()
	check := func(what string, b []byte) {
		t.Helper()
		if err := newP().UnmarshalBinary(b); !errors.Is(err, sentinel) {
			t.Fatalf("%s: got %v, want an error wrapping %v", what, err, sentinel)
		}
	}
	check("empty snapshot", nil)
	check("trailing byte", append(bytes.Clone(snap), 0))
	for cut := 0; cut < len(snap); cut += 1 + len(snap)/50 {
		check(fmt.Sprintf("truncated to %d of %d bytes", cut, len(snap)), snap[:cut])
	}
	if len(snap) > 0 {
		check("last byte cut", snap[:len(snap)-1])
	}
}

// OrderIndependent runs run on xs twice and on n reorderings of xs made
// by shuffle (ShuffleWithinSlots: the arrival orders the engine may
// produce), and fails unless every run gives the same verdicts, bit for
// bit. It returns them.
func OrderIndependent[T any](t testing.TB, xs []T, shuffle func([]T) []T, n int, run func([]T) []schemas.Verdict) []schemas.Verdict {
	t.Helper()
	a := run(xs)
	if b := run(xs); !reflect.DeepEqual(a, b) {
		t.Fatal("the same input twice gave different verdicts")
	}
	for i := range n {
		if c := run(shuffle(xs)); !reflect.DeepEqual(a, c) {
			t.Fatalf("reordering %d within slots changed the verdicts", i)
		}
	}
	return a
}
