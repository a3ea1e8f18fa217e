package window

import "math"

// CollectUniform returns the samples in [from, to) as one uniform sample of
// the window's records, with n, the count of every record added in those
// slots (kept or sampled out). from and to should be slot boundaries.
//
// The samples come in no particular order (slot by slot, in arrival
// order): unlike Collect they are not sorted, so a caller must compute
// something that depends only on the set of samples — sort the values, or
// select order statistics — or sort them itself with CompareSamples. The
// tail and drift processors do the former, and skip an O(n log n) sort of
// the window per evaluation.
//
// Why: a slot that overflowed its cap keeps the Cap smallest hashes, i.e.
// exactly the records with hash <= t_j (t_j its largest kept hash), while a
// slot below its cap keeps everything. Pooling them as they are would
// over-weight the quiet slots of the window. Keeping only the samples with
// hash <= t* = min_j t_j over the overflowed slots makes the pooled set
// exactly {records in the window with hash <= t*}: a uniform sample at rate
// t*/2^64 that depends only on the set of records, not on arrival order.
// When no slot overflowed every sample is kept.
//
// rate is the sampling rate (1 when nothing was dropped). dst is reused.
func (s *Store) CollectUniform(from, to int64, dst []Sample) (kept []Sample, n int64, rate float64) {
	limit := uint64(math.MaxUint64)
	capped := false
	for i := range s.Slots {
		sl := &s.Slots[i]
		if sl.Start < from || sl.Start+s.SlotWidth > to || sl.N <= int64(len(sl.Samples)) {
			continue
		}
		capped = true
		var top uint64
		for _, x := range sl.Samples {
			top = max(top, x.H)
		}
		limit = min(limit, top)
	}
	kept, n = s.collect(from, to, dst[:0])
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
