package window

// MaxPooled bounds the slot arrays a Pool keeps.
const MaxPooled = 64

// Pool keeps the sample arrays of evicted slots so that new slots reuse
// them: with a Pool, a processor's steady-state Add (one new slot per
// interval, one evicted) does not allocate. The zero value is ready; it
// holds at most MaxPooled arrays. A Pool may serve many stores (all of one
// processor, which runs on one goroutine); it is not safe for concurrent
// use.
type Pool struct{ free [][]Sample }

// Add is s.Add(x), giving a new newest slot a recycled array.
func (p *Pool) Add(s *Store, x Sample) {
	start := s.SlotStart(x.T)
	if n := len(s.Slots); len(p.free) > 0 && (n == 0 || s.Slots[n-1].Start < start) {
		// A new newest slot: insert it with a recycled array; Add finds it.
		buf := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		s.Slots = append(s.Slots, Slot{Start: start, Samples: buf[:0]})
	}
	s.Add(x)
}

// EvictBefore is s.EvictBefore(t), keeping the evicted slots' arrays.
func (p *Pool) EvictBefore(s *Store, t int64) {
	for i := range s.Slots {
		sl := &s.Slots[i]
		if sl.Start+s.SlotWidth > t {
			break
		}
		if len(p.free) < MaxPooled && cap(sl.Samples) > 0 {
			p.free = append(p.free, sl.Samples[:0])
		}
	}
	s.EvictBefore(t)
}
