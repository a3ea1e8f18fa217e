package scaling

import (
	"github.com/fusebox-dev/fusebox/stats"
)

// entropy returns the Shannon entropy (bits) of the category counts and its
// normalised form H/log2(K), both 0 for a single category. counts are in
// canonical (hash) order and hold at least one positive count, so
// stats.Entropy cannot fail; if it did, 0 is the honest answer for "no
// spread measured".
func entropy(counts []catCount) (bits, normalized float64) {
	// Reuse a small stack array for the usual handful of categories.
	var buf [32]float64
	w := buf[:0]
	for _, c := range counts {
		w = append(w, float64(c.n))
	}
	bits, normalized, err := stats.Entropy(w)
	if err != nil {
		return 0, 0
	}
	return bits, normalized
}
