package scaling

import (
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// mixField is one span field the request mix is made of.
type mixField uint8

const (
	mixRoute mixField = iota
	mixModel
	mixVariant
	mixTenant
	mixService
)

func parseMix(names []string) []mixField {
	out := make([]mixField, 0, len(names))
	for _, n := range names {
		switch n {
		case "route":
			out = append(out, mixRoute)
		case "model":
			out = append(out, mixModel)
		case "variant":
			out = append(out, mixVariant)
		case "tenant":
			out = append(out, mixTenant)
		case "service":
			out = append(out, mixService)
		}
	}
	return out
}

// otherCategory is the category hash that pools every category beyond
// MaxCategories. categoryHash never returns it.
const otherCategory = 0

// categoryHash is a 64-bit hash of the span's mix tuple, read from the
// span's own fields (not the projected key: the mix is about what the
// traffic is, whatever the SLO keys by). FNV-1a with a separator byte after
// each field, so ("ab","c") and ("a","bc") differ, then a SplitMix64
// finaliser. It never returns otherCategory. It does not allocate.
func categoryHash(fields []mixField, s *schemas.Span) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, f := range fields {
		var v string
		switch f {
		case mixRoute:
			v = s.Route
		case mixModel:
			v = s.Key.Model
		case mixVariant:
			v = s.Key.Variant
		case mixTenant:
			v = s.Key.Tenant
		case mixService:
			v = s.Key.Service
		}
		for i := 0; i < len(v); i++ {
			h ^= uint64(v[i])
			h *= prime
		}
		h ^= 0xff
		h *= prime
	}
	h = processors.Avalanche(h)
	if h == otherCategory {
		h = 1
	}
	return h
}

// mixSlot counts spans per category over one Every of event time, and
// holds their latency moments. The
// counts are exact up to maxCats distinct categories; beyond that the
// categories with the largest hashes are pooled under otherCategory. The
// kept set is the maxCats smallest hashes seen, whatever the arrival order:
// a category, once pooled, never comes back (the largest kept hash only
// decreases), and a category in the final set was never pooled.
type mixSlot struct {
	start  int64
	n      int64
	counts map[uint64]int64
	// lat are the latency moments of the slot's spans with a valid
	// duration (lat.n ≤ n).
	lat moments
	// kept is the number of categories other than otherCategory in counts;
	// maxKept the largest of their hashes (valid when kept == maxCats).
	kept    int
	maxKept uint64
}

func newMixSlot(start int64) mixSlot {
	return mixSlot{start: start, counts: make(map[uint64]int64, 8)}
}

func mixSlotStart(m *mixSlot) int64 { return m.start }

// add counts one span of category h.
func (m *mixSlot) add(h uint64, maxCats int) {
	m.n++
	if c, ok := m.counts[h]; ok {
		m.counts[h] = c + 1
		return
	}
	if m.kept < maxCats {
		m.counts[h] = 1
		m.kept++
		if m.kept == maxCats {
			m.recomputeMax()
		}
		return
	}
	if h > m.maxKept {
		m.counts[otherCategory]++
		return
	}
	// h displaces the largest kept category, whose count joins "other".
	m.counts[otherCategory] += m.counts[m.maxKept]
	delete(m.counts, m.maxKept)
	m.counts[h] = 1
	m.recomputeMax()
}

func (m *mixSlot) recomputeMax() {
	m.maxKept = 0
	for h := range m.counts {
		if h != otherCategory && h > m.maxKept {
			m.maxKept = h
		}
	}
}

// restored recomputes kept and maxKept after a snapshot is decoded.
func (m *mixSlot) restored(maxCats int) {
	m.kept = len(m.counts)
	if _, ok := m.counts[otherCategory]; ok {
		m.kept--
	}
	if m.kept >= maxCats {
		m.recomputeMax()
	}
}
