package burnrate

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/fusebox-dev/fusebox/processors"
)

// refCount is count on a ring of 16-byte buckets, as the processor kept
// its rings before the narrow form: the specification the ring must meet.
func refCount(ring []bucket, start, width int64, bad bool) {
	b := &ring[processors.FloorMod(start/width, int64(len(ring)))]
	if b.Start != start {
		if b.Start > start {
			return
		}
		*b = bucket{Start: start}
	}
	if bad {
		b.Bad++
	} else {
		b.Good++
	}
}

// TestRingMatchesWideBuckets drives a ring and the 16-byte reference with
// the same calls — near 1970 and on both sides of it, years ahead and
// behind, within a few turns of the int64 limits (whose laps do not fit 32
// bits), and bursts of over 65,535 calls in one bucket — and requires the
// same (start, good, bad) in every slot after every call, for one-minute,
// hourly and one-second buckets.
func TestRingMatchesWideBuckets(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		width int64
	}{
		{"fine 1m", 396, int64(time.Minute)},
		{"coarse 1h", 75, int64(time.Hour)},
		{"fine 1s short ring", 11, int64(time.Second)},
		{"one slot", 1, int64(time.Minute)},
		{"1ns buckets", 12, 1}, // laps of 12 ns: far starts do not fit 32 bits
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.n), 7))
			got, want := newRing(c.n), make([]bucket, c.n)
			n := int64(c.n)
			t0 := int64(1_700_000_000) * int64(time.Second)
			check := func(step int, start int64) {
				t.Helper()
				for i := range n {
					s, g, b := got.at(i, c.width)
					if w := want[i]; s != w.Start || g != w.Good || b != w.Bad {
						t.Fatalf("step %d (start %d): slot %d holds (%d, %d, %d), want (%d, %d, %d)", step, start, i, s, g, b, w.Start, w.Good, w.Bad)
					}
				}
			}
			narrowSteps := 0
			for step := range 20_000 {
				var t1 int64
				switch k := r.IntN(100); {
				case k < 60: // around now, a few turns of the ring
					t1 = t0 + r.Int64N(4*n*c.width)
				case k < 70: // around 1970, both sides
					t1 = r.Int64N(4*n*c.width) - 2*n*c.width
				case k < 80: // years away
					t1 = t0 + (r.Int64N(200)-100)*365*24*int64(time.Hour)
				case k < 85: // within a few turns of the limits
					if r.IntN(2) == 0 {
						t1 = math.MaxInt64 - r.Int64N(3*n*c.width)
					} else {
						// a bucket in, so that the floor does not wrap
						t1 = math.MinInt64 + c.width + r.Int64N(3*n*c.width)
					}
				default: // the newest bucket again
					t1 = t0 + 4*n*c.width
				}
				start := processors.FloorTo(t1, c.width)
				bad := r.IntN(7) == 0
				count(&got, nil, start, c.width, bad, split{})
				refCount(want, start, c.width, bad)
				if got.wide == nil {
					narrowSteps++
				}
				check(step, start)
			}
			// One bucket past 16 bits: the slot's own start is never too old.
			burst, _, _ := got.at(n-1, c.width)
			for i := range 140_000 { // good, then bad, each past 16 bits
				count(&got, nil, burst, c.width, i >= 70_000, split{})
				refCount(want, burst, c.width, i >= 70_000)
			}
			check(20_000, burst)
			widened := got.wide != nil
			if c.width >= int64(time.Second) && narrowSteps != 20_000 {
				t.Fatalf("widened after %d steps by a start: every int64 start fits at %d ns buckets", narrowSteps, c.width)
			}
			if c.width == 1 && narrowSteps == 20_000 {
				t.Fatal("1 ns buckets: no start outgrew 32-bit laps")
			}
			if !widened {
				t.Fatal("the ring never took its wide form: the test did not reach 16 bits")
			}
		})
	}
}

// TestRingStaysNarrowOnOrdinaryTraffic: a year of calls at a few hundred
// a bucket keeps the 8-byte slots, and a snapshot's ring is narrowed on
// restore when it fits and kept wide when a count or start does not.
func TestRingStaysNarrowOnOrdinaryTraffic(t *testing.T) {
	if s := unsafe.Sizeof(narrowBucket{}); s != 8 {
		t.Fatalf("narrowBucket is %d bytes, want 8", s)
	}
	w := int64(time.Minute)
	r := newRing(396)
	t0 := processors.FloorTo(int64(1_700_000_000)*int64(time.Second), w)
	for m := range int64(365 * 24 * 60) {
		for range 1 + m%300 {
			count(&r, nil, t0+m*w, w, m%11 == 0, split{})
		}
	}
	if r.wide != nil {
		t.Fatal("ordinary traffic widened the ring")
	}
	wide := make([]bucket, r.len())
	for i := range r.len() {
		s, g, b := r.at(i, w)
		wide[i] = bucket{Start: s, Good: g, Bad: b}
	}
	if back := ringOf(wide, w); back.wide != nil || len(back.narrow) != len(r.narrow) {
		t.Fatalf("a restored ordinary ring is not narrow: %d wide, %d narrow", len(back.wide), len(back.narrow))
	}
	for _, c := range []struct {
		name string
		edit func(b *bucket)
	}{
		{"count over 16 bits", func(b *bucket) { b.Good = math.MaxUint16 + 1 }},
		{"start off its slot", func(b *bucket) { b.Start += w }},
		{"start not on a bucket edge", func(b *bucket) { b.Start++ }},
	} {
		edited := append([]bucket(nil), wide...)
		c.edit(&edited[5])
		back := ringOf(edited, w)
		if back.wide == nil {
			t.Fatalf("%s: restored narrow", c.name)
		}
		for i := range back.len() {
			if s, g, b := back.at(i, w); (bucket{s, g, b}) != edited[i] {
				t.Fatalf("%s: slot %d restored as (%d, %d, %d), want %+v", c.name, i, s, g, b, edited[i])
			}
		}
	}
}

// TestRingWidensAt16Bits: good calls and bad calls each past 65,535 in one
// bucket, on a fresh narrow ring, count on exactly (the ring widens).
func TestRingWidensAt16Bits(t *testing.T) {
	w := int64(time.Minute)
	start := processors.FloorTo(int64(1_700_000_000)*int64(time.Second), w)
	for _, bad := range []bool{false, true} {
		got, want := newRing(20), make([]bucket, 20)
		for range 70_000 {
			count(&got, nil, start, w, bad, split{})
			refCount(want, start, w, bad)
		}
		i := processors.FloorMod(start/w, 20)
		if s, g, b := got.at(i, w); (bucket{s, g, b}) != want[i] || got.wide == nil {
			t.Fatalf("bad=%v: (%d, %d, %d), wide %v; want %+v, wide", bad, s, g, b, got.wide != nil, want[i])
		}
	}
}
