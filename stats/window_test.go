package stats

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestWindowRing(t *testing.T) {
	if _, err := NewWindow(0); !errors.Is(err, ErrInvalidParameter) {
		t.Error(err)
	}
	w, _ := NewWindow(4)
	if _, ok := w.Oldest(); ok {
		t.Error("empty window has an oldest value")
	}
	for i := range int64(6) {
		old, ev := w.Add(i*10, float64(i))
		if ev != (i >= 4) || (ev && old != (TimedValue{(i - 4) * 10, float64(i - 4)})) {
			t.Errorf("add %d: evicted %v %v", i, old, ev)
		}
	}
	if got := w.AppendValues(nil); !slices.Equal(got, []float64{2, 3, 4, 5}) || w.Len() != 4 || w.Cap() != 4 {
		t.Errorf("contents %v", got)
	}
	if o, _ := w.Oldest(); o.T != 20 {
		t.Errorf("oldest %v", o)
	}
	if n, _ := w.Newest(); n.T != 50 || w.At(1).V != 3 {
		t.Errorf("newest %v, At(1) %v", n, w.At(1))
	}
	var gone []float64
	for {
		tv, ok := w.EvictBefore(40)
		if !ok {
			break
		}
		gone = append(gone, tv.V)
	}
	if !slices.Equal(gone, []float64{2, 3}) || w.Len() != 2 {
		t.Errorf("evicted %v, left %d", gone, w.Len())
	}
	w.Add(60, 6)
	w.Add(70, 7)
	w.Add(80, 8) // wraps and evicts 4
	if got := w.AppendTimed(nil); len(got) != 4 || got[0].V != 5 || got[3].V != 8 {
		t.Errorf("after wrap %v", got)
	}
	if tv, ok := w.PopOldest(); !ok || tv.V != 5 {
		t.Error("PopOldest")
	}
	w.Reset()
	if w.Len() != 0 {
		t.Error("Reset")
	}
}

func TestWindowMarshalRoundTrip(t *testing.T) {
	w, _ := NewWindow(7)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 11 { // wrapped state
		w.Add(int64(i), r.NormFloat64())
	}
	w.EvictBefore(6)
	raw, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back Window
	if err := back.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	if back.Cap() != 7 || !slices.Equal(back.AppendTimed(nil), w.AppendTimed(nil)) {
		t.Fatalf("round trip: %v vs %v", back.AppendTimed(nil), w.AppendTimed(nil))
	}
	// Both behave the same afterwards.
	for i := range 9 {
		a, ea := w.Add(int64(100+i), float64(i))
		b, eb := back.Add(int64(100+i), float64(i))
		if a != b || ea != eb {
			t.Fatalf("diverged at %d", i)
		}
	}
	for _, bad := range [][]byte{nil, {9}, raw[:len(raw)-1], append(slices.Clone(raw), 0), {1, 0, 0}, {1, 2, 5}} {
		if err := back.UnmarshalBinary(bad); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("UnmarshalBinary(%v): %v", bad, err)
		}
	}
}

func TestWindowAddDoesNotAllocate(t *testing.T) {
	w, _ := NewWindow(100)
	i := int64(0)
	if a := testing.AllocsPerRun(1000, func() { i++; w.Add(i, float64(i)) }); a != 0 {
		t.Errorf("Add allocates %v", a)
	}
	buf := make([]float64, 0, 100)
	if a := testing.AllocsPerRun(100, func() { buf = w.AppendValues(buf[:0]) }); a != 0 {
		t.Errorf("AppendValues allocates %v", a)
	}
}

// TestExceedanceStoreTracksWindow runs a window and a store side by side
// through random adds (with eviction by capacity and by time) and checks
// the store's invariant after every step: it holds exactly the window's
// values above its floor, sorted, and when it covers the tail it holds the
// largest TailSize values.
func TestExceedanceStoreTracksWindow(t *testing.T) {
	w, _ := NewWindow(500)
	s, _ := NewExceedanceStore(60)
	r := rand.New(rand.NewPCG(3, 4))
	var scratch []float64
	rebuilds := 0
	for i := range 6000 {
		v := math.Round(math.Exp(r.NormFloat64())*20) / 4 // ties
		if (i/1500)%2 == 1 {
			v -= 100 // a shift down: the store runs dry and must rebuild
		}
		if old, ev := w.Add(int64(i), v); ev {
			s.Remove(old.V)
		}
		s.Add(v)
		if i%777 == 0 {
			for {
				old, ok := w.EvictBefore(int64(i - 300))
				if !ok {
					break
				}
				s.Remove(old.V)
			}
		}
		vals := w.AppendValues(nil)
		if !s.Covers(len(vals), 0.95) {
			scratch = s.Rebuild(vals, 2*TailSize(len(vals), 0.95), scratch)
			rebuilds++
		}
		var want []float64
		for _, x := range vals {
			if x > s.Floor() {
				want = append(want, x)
			}
		}
		slices.Sort(want)
		if !slices.Equal(s.Top(), want) {
			t.Fatalf("step %d: store %v, window above floor %v: %v", i, s.Len(), s.Floor(), len(want))
		}
		slices.Sort(vals)
		k := TailSize(len(vals), 0.95)
		if !slices.Equal(s.Top()[s.Len()-k:], vals[len(vals)-k:]) {
			t.Fatalf("step %d: store does not hold the top %d", i, k)
		}
	}
	if rebuilds == 0 {
		t.Error("the test never exercised Rebuild")
	}
	// Round trip.
	raw, _ := s.MarshalBinary()
	var back ExceedanceStore
	if err := back.UnmarshalBinary(raw); err != nil || back.Floor() != s.Floor() || !slices.Equal(back.Top(), s.Top()) || back.Cap() != s.Cap() {
		t.Fatalf("round trip: %v", err)
	}
	bad := slices.Clone(raw)
	binary.LittleEndian.PutUint64(bad[len(bad)-8:], math.Float64bits(math.Inf(-1))) // largest value now below the floor
	for _, b := range [][]byte{nil, {7}, raw[:len(raw)-3], bad} {
		if err := back.UnmarshalBinary(b); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("UnmarshalBinary: %v", err)
		}
	}
	if _, err := NewExceedanceStore(0); !errors.Is(err, ErrInvalidParameter) {
		t.Error(err)
	}
}

func TestExceedanceStoreNoAllocs(t *testing.T) {
	s, _ := NewExceedanceStore(128)
	vals := lognormalDraws(1000, 1, 5)
	i := 0
	if a := testing.AllocsPerRun(2000, func() {
		v := vals[i%len(vals)]
		i++
		s.Add(v)
		if i%3 == 0 {
			s.Remove(v)
		}
	}); a != 0 {
		t.Errorf("Add/Remove allocate %v", a)
	}
}
