package scaling

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"

	"github.com/fusebox-dev/fusebox/schemas"
)

// moments are the exact count, sum and sum of squares of span durations in
// integer nanoseconds: the state the latency variance needs, O(1) per slot
// and mergeable. Integer sums are associative and commutative, so the
// moments of a window — and the variance computed from them — are the same
// bit for bit whatever the arrival order of the spans and however they are
// split into slots.
//
// The unit is the nanosecond because that is the resolution of the data:
// schemas.Span.DurationMs is derived from Unix-nanosecond start and end
// times, (end-start)/1e6, and round(DurationMs·1e6) gives the integer back
// exactly for every duration up to schemas.MaxDurationMs (8.64e13 ns <
// 2^47, where the float64 relative error of 2^-53 is under 0.01 ns). A
// coarser unit (µs) would round 1e-6 ms to 0 and change the variance of
// short calls.
//
// Overflow bounds, with x ≤ 8.64e13 ns < 2^47 and n < 2^63 (an int64
// count): Σx < 2^110, kept in 128 bits (s[0] low word); Σx² < 2^94·2^63 =
// 2^157, kept in 192 bits (q[0] low word). Neither can overflow for any
// number of spans an int64 can count, in a slot or in a merged window (a
// 128-bit Σx² alone would hold 4.5e10 spans of 24 h, or 3.4e26 of 1 ms).
type moments struct {
	n int64     // spans whose duration is counted
	s [2]uint64 // Σx, little-endian 64-bit words
	q [3]uint64 // Σx², little-endian 64-bit words
}

// momentsSize is the encoded size of moments in bytes (n, s, q).
const momentsSize = 8 + 2*8 + 3*8

// durationNs converts a span duration in ms to integer nanoseconds,
// rounding half away from zero. ok is false for a duration that is NaN,
// negative, infinite or longer than schemas.MaxDurationMs: span
// validation (schemas.Span.Validate, at ingest) rejects those, but
// ObserveSpan can still be handed one (a keyed batch carries the float64
// bits as they are, and tests and tools call it directly). Such a span is
// no latency: it counts in the mix and in n but not in the moments, so the
// verdict's latency_samples detail is below n (never a NaN variance).
func durationNs(ms float64) (uint64, bool) {
	if !(ms >= 0 && ms <= schemas.MaxDurationMs) { // NaN fails both
		return 0, false
	}
	return uint64(math.Round(ms * 1e6)), true
}

// add counts one duration x (ns, at most 2^47).
func (m *moments) add(x uint64) {
	m.n++
	var c uint64
	m.s[0], c = bits.Add64(m.s[0], x, 0)
	m.s[1] += c
	hi, lo := bits.Mul64(x, x)
	m.q[0], c = bits.Add64(m.q[0], lo, 0)
	m.q[1], c = bits.Add64(m.q[1], hi, c)
	m.q[2] += c
}

// merge adds o's moments to m.
func (m *moments) merge(o *moments) {
	m.n += o.n
	var c uint64
	m.s[0], c = bits.Add64(m.s[0], o.s[0], 0)
	m.s[1], _ = bits.Add64(m.s[1], o.s[1], c)
	m.q[0], c = bits.Add64(m.q[0], o.q[0], 0)
	m.q[1], c = bits.Add64(m.q[1], o.q[1], c)
	m.q[2], _ = bits.Add64(m.q[2], o.q[2], c)
}

// spreadScratch holds the big numbers of one variance computation, reused
// across evaluations so the computation does not allocate once warm.
type spreadScratch struct {
	buf           [24]byte
	s, q, num, t  big.Int
	numF, denF, v big.Float
}

// setWords sets z to the little-endian words w.
func (sc *spreadScratch) setWords(z *big.Int, w []uint64) *big.Int {
	b := sc.buf[:8*len(w)]
	for i, x := range w {
		binary.BigEndian.PutUint64(b[8*(len(w)-1-i):], x)
	}
	return z.SetBytes(b)
}

// spread returns the sample variance (ms²) and standard deviation (ms) of
// the durations counted in m:
//
//	variance = (n·Σx² − (Σx)²) / (n·(n−1)) / 1e12   [x in ns]
//
// The numerator and denominator are exact integers (math/big); their
// quotient is rounded once to float64 (big.Float.Quo at 53 bits, to
// nearest even), so no cancellation can happen however large the mean is
// against the spread. stddev = math.Sqrt(variance), a function of the
// rounded variance. Fewer than two durations: 0, 0 (no spread measured).
func (sc *spreadScratch) spread(m *moments) (variance, stddev float64) {
	if m.n < 2 {
		return 0, 0
	}
	n := uint64(m.n)
	sc.setWords(&sc.s, m.s[:])
	sc.setWords(&sc.q, m.q[:])
	// num = n·Σx² − (Σx)², ≥ 0 by Cauchy–Schwarz.
	sc.num.Mul(&sc.q, sc.t.SetUint64(n))
	sc.num.Sub(&sc.num, sc.t.Mul(&sc.s, &sc.s))
	if sc.num.Sign() <= 0 {
		return 0, 0
	}
	// den = n·(n−1)·1e12 (ns² → ms²), < 2^63·2^63·2^40: exact in big.
	hi, lo := bits.Mul64(n, n-1)
	sc.t.SetUint64(hi)
	sc.t.Lsh(&sc.t, 64)
	sc.t.Or(&sc.t, sc.s.SetUint64(lo))
	sc.t.Mul(&sc.t, sc.s.SetUint64(1e12))
	// SetInt on a zero-precision Float keeps every bit of the integer.
	sc.numF.SetPrec(0).SetInt(&sc.num)
	sc.denF.SetPrec(0).SetInt(&sc.t)
	sc.v.SetPrec(53).SetMode(big.ToNearestEven).Quo(&sc.numF, &sc.denF)
	variance, _ = sc.v.Float64()
	return variance, math.Sqrt(variance)
}
