package window

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/processors/snapcodec"
)

func samples(r *rand.Rand, n int, span int64) []Sample {
	xs := make([]Sample, n)
	for i := range xs {
		xs[i] = Sample{T: r.Int64N(span), V: r.NormFloat64(), H: r.Uint64()}
	}
	return xs
}

func TestCollectIndependentOfArrivalOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := samples(r, 5000, 10_000)
	a, _ := New(1000, 100) // caps bite: ~500 per slot
	b, _ := New(1000, 100)
	for _, x := range xs {
		a.Add(x)
	}
	ys := slices.Clone(xs)
	r.Shuffle(len(ys), func(i, j int) { ys[i], ys[j] = ys[j], ys[i] })
	for _, x := range ys {
		b.Add(x)
	}
	ga, na := a.Collect(0, 10_000, nil)
	gb, nb := b.Collect(0, 10_000, nil)
	if na != 5000 || nb != 5000 {
		t.Fatalf("counts %d %d, want 5000", na, nb)
	}
	if len(ga) != 1000 || !slices.Equal(ga, gb) {
		t.Fatalf("kept %d and %d samples, equal=%v; want the same 1000", len(ga), len(gb), slices.Equal(ga, gb))
	}
	// The kept samples are exactly the 100 smallest hashes of each slot.
	for s := int64(0); s < 10; s++ {
		var want []uint64
		for _, x := range xs {
			if x.T/1000 == s {
				want = append(want, x.H)
			}
		}
		slices.Sort(want)
		var got []uint64
		for _, x := range ga {
			if x.T/1000 == s {
				got = append(got, x.H)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want[:100]) {
			t.Fatalf("slot %d does not keep the 100 smallest hashes", s)
		}
	}
}

func TestCollectRangeAndEvict(t *testing.T) {
	s, _ := New(10, 1000)
	for ts := int64(-25); ts < 50; ts++ {
		s.Add(Sample{T: ts, V: float64(ts), H: uint64(ts + 100)})
	}
	got, n := s.Collect(0, 20, nil)
	if n != 20 || len(got) != 20 || got[0].T != 0 || got[19].T != 19 {
		t.Fatalf("Collect(0,20) = %d samples (n=%d), first %v", len(got), n, got[0])
	}
	if s.SlotStart(-25) != -30 {
		t.Fatalf("SlotStart(-25) = %d, want -30", s.SlotStart(-25))
	}
	s.EvictBefore(20)
	if got, n := s.Collect(-100, 100, nil); n != 30 || len(got) != 30 || got[0].T != 20 {
		t.Fatalf("after evict: %d samples, n=%d", len(got), n)
	}
	if _, err := New(0, 1); err == nil {
		t.Fatal("New(0, 1) accepted a zero width")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, _ := New(1000, 50)
	for _, x := range samples(r, 3000, 5000) {
		a.Add(x)
	}
	b := &Store{}
	rest, err := b.DecodeBinary(append(a.AppendBinary(nil), 7))
	if err != nil || len(rest) != 1 || rest[0] != 7 {
		t.Fatalf("decode: %v, rest %v", err, rest)
	}
	// Both continue identically.
	more := samples(r, 3000, 5000)
	for _, x := range more {
		a.Add(x)
		b.Add(x)
	}
	ga, na := a.Collect(0, 5000, nil)
	gb, nb := b.Collect(0, 5000, nil)
	if na != nb || !slices.Equal(ga, gb) {
		t.Fatal("restored store diverged from the original")
	}
	enc := a.AppendBinary(nil)
	for cut := 0; cut < len(enc); cut += 97 {
		if _, err := (&Store{}).DecodeBinary(enc[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated snapshot (%d of %d bytes): %v", cut, len(enc), err)
		}
	}
	// Decode checks the configuration when asked to.
	for _, tc := range []struct {
		width int64
		cap   int
		want  string
	}{{0, 0, ""}, {1000, 50, ""}, {500, 0, "want 500 ns (every, or drift's step)"}, {1000, 60, "want max_samples_per_slot=60"}} {
		d := snapcodec.NewDecoder(enc)
		(&Store{}).Decode(d, tc.width, tc.cap)
		err := d.Finish()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Decode(width %d, cap %d): %v, want %q", tc.width, tc.cap, err, tc.want)
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	s, _ := New(60e9, 4096)
	r := rand.New(rand.NewPCG(5, 6))
	xs := samples(r, 1<<16, 60e9)
	for _, x := range xs[:8192] { // warm the slot to its cap
		s.Add(x)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Add(xs[i&(1<<16-1)])
	}
}
