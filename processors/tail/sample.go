package tail

import (
	"math"

	"github.com/fusebox-dev/fusebox/processors/window"
)

// collectUniform returns the window's samples in [from, to) as one uniform
// sample of the window's spans, sorted by (T, H, V), with n, the count of
// every span in the window (kept or sampled out).
//
// Why: a slot that overflowed its cap keeps the Cap smallest span hashes,
// i.e. exactly the spans with hash <= t_j (t_j its largest kept hash), while
// a slot below its cap keeps everything. Pooling them as they are would
// over-weight the quiet minutes of the window. Keeping only the samples
// with hash <= t* = min_j t_j over the overflowed slots makes the pooled set
// exactly {spans in the window with hash <= t*}: a uniform sample at rate
// t*/2^64 that depends only on the set of spans, not on arrival order.
// When no slot overflowed every sample is kept.
//
// rate is the sampling rate (1 when nothing was dropped). dst is reused.
func collectUniform(st *window.Store, from, to int64, dst []window.Sample) (kept []window.Sample, n int64, rate float64) {
	limit := uint64(math.MaxUint64)
	capped := false
	for i := range st.Slots {
		sl := &st.Slots[i]
		if sl.Start < from || sl.Start+st.SlotWidth > to || sl.N <= int64(len(sl.Samples)) {
			continue
		}
		capped = true
		var top uint64
		for _, x := range sl.Samples {
			top = max(top, x.H)
		}
		limit = min(limit, top)
	}
	kept, n = st.Collect(from, to, dst[:0])
	if !capped {
		return kept, n, 1
	}
	j := 0
	for _, x := range kept {
		if x.H <= limit {
			kept[j] = x
			j++
		}
	}
	// limit/2^64, the fraction of the hash space kept.
	return kept[:j], n, math.Ldexp(float64(limit), -64)
}
