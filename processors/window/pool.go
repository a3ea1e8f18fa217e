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
		// The slot it follows is sealed, and the array seal replaced is
		// pooled.
		old := s.seal()
		buf := p.take(s.sizeHint())
		if old != nil && len(p.free) < MaxPooled {
			p.free = append(p.free, old[:0])
		}
		s.roomForSlot()
		s.Slots = append(s.Slots, Slot{Start: start, Samples: buf[:0]})
	}
	s.Add(x)
}

// take removes from the pool and returns the array of the smallest
// capacity of at least n, or the largest when none is that large (append
// grows it). Why not the last one pooled: the pool serves every key of a
// processor, so handing out any array lets the busiest key's arrays
// circulate to every key (a busy key's tail state was 2.2x its samples).
func (p *Pool) take(n int) []Sample {
	best := -1
	for i, b := range p.free {
		switch {
		case best < 0:
			best = i
		case cap(p.free[best]) < n && cap(b) > cap(p.free[best]):
			best = i
		case cap(b) >= n && cap(b) < cap(p.free[best]):
			best = i
		}
	}
	buf := p.free[best]
	last := len(p.free) - 1
	p.free[best] = p.free[last]
	p.free[last] = nil
	p.free = p.free[:last]
	return buf
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
