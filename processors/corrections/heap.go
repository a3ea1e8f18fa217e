package corrections

// itemHeap is the join index's min-heap of (end, hash, entry) in pages of
// heapPage items: pushing past a page allocates the next page instead of
// copying the heap into a larger array (at 4,000 calls/s the index holds
// ~300k spans per partition worker; append's growth copied and allocated
// ~5x that while the window filled, and the garbage collector paid for
// it). Item i is pages[i/heapPage][i%heapPage]. The order is the index's
// (spanIndex.less), which reads an entry's full hash on a tie of the
// item's end and high hash bits.
type itemHeap struct {
	pages [][]heapItem
	n     int
}

// heapPage is the page size in items (64 KiB pages).
const heapPage = 4096

func (h *itemHeap) len() int { return h.n }

func (h *itemHeap) at(i int) *heapItem { return &h.pages[i/heapPage][i%heapPage] }

func (h *itemHeap) push(x *spanIndex, it heapItem) {
	if h.n == len(h.pages)*heapPage {
		h.pages = append(h.pages, make([]heapItem, heapPage))
	}
	i := h.n
	h.n++
	*h.at(i) = it
	for i > 0 {
		p := (i - 1) / 2
		a, b := h.at(i), h.at(p)
		if !x.less(*a, *b) {
			break
		}
		*a, *b = *b, *a
		i = p
	}
}

// pop removes the smallest item and returns its entry. Pages more than
// one beyond the last in use are released.
func (h *itemHeap) pop(x *spanIndex) int32 {
	top := h.at(0).idx
	h.n--
	n := h.n
	*h.at(0) = *h.at(n)
	if len(h.pages) > n/heapPage+2 {
		h.pages[len(h.pages)-1] = nil
		h.pages = h.pages[:len(h.pages)-1]
	}
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && x.less(*h.at(r), *h.at(l)) {
			m = r
		}
		a, b := h.at(m), h.at(i)
		if !x.less(*a, *b) {
			break
		}
		*a, *b = *b, *a
		i = m
	}
	return top
}
