package scaling

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// exactVariance is the reference: the two-pass sample variance of xs (ns)
// in exact rationals, Σ(x − mean)² / (n − 1), in ms², rounded once to
// float64 by big.Rat. It shares no code and no formula with moments.spread
// (which uses the one-pass n·Σx² − (Σx)²), so their agreement bit for bit
// checks both the algebra and the 128/192-bit carries.
func exactVariance(xs []uint64) float64 {
	n := int64(len(xs))
	if n < 2 {
		return 0
	}
	sum := new(big.Int)
	for _, x := range xs {
		sum.Add(sum, new(big.Int).SetUint64(x))
	}
	mean := new(big.Rat).SetFrac(sum, big.NewInt(n))
	ss := new(big.Rat)
	for _, x := range xs {
		d := new(big.Rat).SetInt(new(big.Int).SetUint64(x))
		d.Sub(d, mean)
		ss.Add(ss, d.Mul(d, d))
	}
	ss.Quo(ss, new(big.Rat).SetInt64((n-1)*1e12))
	f, _ := ss.Float64()
	return f
}

func momentsOf(xs []uint64) moments {
	var m moments
	for _, x := range xs {
		m.add(x)
	}
	return m
}

// adversarial returns the value sets the integer moments must get exactly
// right, in ns.
func adversarial(r *rand.Rand) map[string][]uint64 {
	const maxNs = schemas.MaxDurationMs * 1e6
	sets := map[string][]uint64{}
	tiny := make([]uint64, 500) // 1e-6 ms (1 ns) and 2 ns
	for i := range tiny {
		tiny[i] = 1 + uint64(i%2)
	}
	sets["1e-6ms"] = tiny
	hour := make([]uint64, 300) // 3.6e6 ms, some one ns longer
	for i := range hour {
		hour[i] = 3_600_000_000_000 + uint64(r.IntN(2))
	}
	sets["3.6e6ms+1ns"] = hour
	equal := make([]uint64, 2500) // many equal values: variance exactly 0
	for i := range equal {
		equal[i] = 123_456_789
	}
	sets["equal"] = equal
	// A huge mean with a tiny spread: 24 h ± a few ns, where the float
	// formula (n·Σx² − (Σx)²) cancels all of its 53 bits.
	huge := make([]uint64, 1000)
	for i := range huge {
		huge[i] = maxNs - uint64(r.IntN(5))
	}
	sets["24h±5ns"] = huge
	mixed := make([]uint64, 2000) // 1 ns to 24 h, log-uniform
	for i := range mixed {
		mixed[i] = uint64(math.Exp(r.Float64() * math.Log(maxNs)))
	}
	sets["1ns..24h"] = mixed
	sets["two"] = []uint64{0, maxNs}
	return sets
}

// TestMomentsOrderAndSplitIndependent: for any arrival order and any split
// of the spans into slots (merged in any order), the moments and so the
// variance are the same bit for bit, and equal to the exact two-pass
// reference rounded once.
func TestMomentsOrderAndSplitIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var sc spreadScratch
	for name, xs := range adversarial(r) {
		want := exactVariance(xs)
		whole := momentsOf(xs)
		v0, sd0 := sc.spread(&whole)
		if v0 != want || sd0 != math.Sqrt(want) {
			t.Errorf("%s: variance %v stddev %v, exact reference %v", name, v0, sd0, want)
		}
		for trial := range 20 {
			perm := r.Perm(len(xs))
			slots := make([]moments, 1+r.IntN(12))
			for _, i := range perm {
				slots[r.IntN(len(slots))].add(xs[i])
			}
			var m moments
			for _, j := range r.Perm(len(slots)) {
				m.merge(&slots[j])
			}
			if m != whole {
				t.Fatalf("%s trial %d: merged moments %+v, whole %+v", name, trial, m, whole)
			}
			if v, sd := sc.spread(&m); math.Float64bits(v) != math.Float64bits(v0) || math.Float64bits(sd) != math.Float64bits(sd0) {
				t.Fatalf("%s trial %d: variance %v stddev %v, first %v %v", name, trial, v, sd, v0, sd0)
			}
		}
		t.Logf("%-12s n=%4d variance %.17g ms²", name, len(xs), v0)
	}
}

// TestMomentsNoCancellation: on 24 h ± a few ns the naive float formula
// is wrong by orders of magnitude, even negative (the case is
// adversarial); a float two-pass on the ms values, shifted by the first
// value so the mean is not itself rounded at 8.6e10 ms (where the ulp is
// 15 ns), is within 1e-2 of the exact value (the ms values themselves are
// off by up to 0.0075 ns against deviations of a few ns); the integer
// moments are exact.
func TestMomentsNoCancellation(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := adversarial(r)["24h±5ns"]
	want := exactVariance(xs)
	var sc spreadScratch
	m := momentsOf(xs)
	if got, _ := sc.spread(&m); got != want {
		t.Fatalf("integer moments: %v, exact %v", got, want)
	}
	var s, q, n float64
	var w stats.Welford
	ms := make([]float64, len(xs))
	for i, x := range xs {
		ms[i] = float64(x) / 1e6
		s, q, n = s+ms[i], q+ms[i]*ms[i], n+1
		w.Add(ms[i])
	}
	naive := (n*q - s*s) / (n * (n - 1))
	if math.Abs(naive-want) < 10*want {
		t.Fatalf("naive float formula %v is near the exact %v: the case is not adversarial", naive, want)
	}
	var shift float64
	for _, x := range ms {
		shift += x - ms[0]
	}
	mean := ms[0] + shift/n
	var ss float64
	for _, x := range ms {
		ss += (x - mean) * (x - mean)
	}
	twoPass := ss / (n - 1)
	if math.Abs(twoPass-want) > 1e-2*want {
		t.Errorf("float two-pass %v, exact %v: beyond 1e-2", twoPass, want)
	}
	wv, _ := w.Variance()
	t.Logf("exact %.6g ms², naive float %.6g, float two-pass %.6g, Welford %.6g", want, naive, twoPass, wv)
}

// TestMomentsAgreeWithWelford: on the generated traffic (durations of
// whole ns) the moments' variance is the Welford variance of before within
// 1e-12 relative: the change of the verdicts' variance_ms2 where no slot
// was sampled is in the last bits.
func TestMomentsAgreeWithWelford(t *testing.T) {
	spans := generate(1, t0, t0+5*minute, script{surgeFrom: t0 + 2*minute, surgeTo: t0 + 4*minute})
	var w stats.Welford
	var m moments
	for i := range spans {
		x, ok := durationNs(spans[i].DurationMs)
		if !ok {
			t.Fatalf("generated duration %v rejected", spans[i].DurationMs)
		}
		m.add(x)
		w.Add(float64(x) / 1e6)
	}
	var sc spreadScratch
	got, _ := sc.spread(&m)
	want, _ := w.Variance()
	if rel := math.Abs(got-want) / want; rel > 1e-12 {
		t.Fatalf("moments %v, Welford %v: relative difference %.3g", got, want, rel)
	}
	if ref := exactVariance(func() []uint64 {
		xs := make([]uint64, len(spans))
		for i := range spans {
			xs[i], _ = durationNs(spans[i].DurationMs)
		}
		return xs
	}()); got != ref {
		t.Fatalf("moments %v, exact %v", got, ref)
	}
}

// TestMomentsCarries: 2^40 spans of 24 h, built by doubling, carry out of
// every low word; the sums are checked word by word against math/big and
// the variance of equal values is exactly 0.
func TestMomentsCarries(t *testing.T) {
	const x = schemas.MaxDurationMs * 1e6
	var m moments
	m.add(x)
	for range 40 {
		c := m
		m.merge(&c)
	}
	n := new(big.Int).Lsh(big.NewInt(1), 40)
	wantS := new(big.Int).Mul(n, new(big.Int).SetUint64(x))
	wantQ := new(big.Int).Mul(wantS, new(big.Int).SetUint64(x))
	var sc spreadScratch
	if m.n != 1<<40 || sc.setWords(new(big.Int), m.s[:]).Cmp(wantS) != 0 || sc.setWords(new(big.Int), m.q[:]).Cmp(wantQ) != 0 {
		t.Fatalf("moments %+v: want n 2^40, Σx %v, Σx² %v", m, wantS, wantQ)
	}
	if m.q[2] == 0 {
		t.Fatal("Σx² did not reach its third word: the test does not test the carry")
	}
	if v, sd := sc.spread(&m); v != 0 || sd != 0 {
		t.Fatalf("equal values: variance %v stddev %v", v, sd)
	}
	// One span d = 1000 ns shorter among them: with N = n+1 spans,
	// Σ(x−mean)² = n·d²/N and the sample variance n·d²/N / n ns².
	m.add(x - 1000)
	xsN := new(big.Int).Add(n, big.NewInt(1))
	ref := new(big.Rat).SetFrac(new(big.Int).Mul(n, big.NewInt(1000*1000)), xsN)
	ref.Quo(ref, new(big.Rat).SetInt(new(big.Int).Mul(n, big.NewInt(1e12))))
	want, _ := ref.Float64()
	if v, _ := sc.spread(&m); v != want {
		t.Fatalf("2^40 equal values and one 1000 ns shorter: variance %v, exact %v", v, want)
	}
}

// TestDurationNs: the unit conversion and what it refuses.
func TestDurationNs(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want uint64
		ok   bool
	}{
		{0, 0, true}, {math.Copysign(0, -1), 0, true}, {1e-6, 1, true}, {0.4e-6, 0, true}, {0.5e-6, 1, true},
		{3.6e6, 3_600_000_000_000, true}, {schemas.MaxDurationMs, schemas.MaxDurationMs * 1e6, true},
		{123.456789, 123_456_789, true},
		{math.NaN(), 0, false}, {-1e-9, 0, false}, {math.Inf(1), 0, false}, {math.Inf(-1), 0, false},
		{schemas.MaxDurationMs + 1e-6, 0, false},
	} {
		got, ok := durationNs(c.ms)
		if got != c.want || ok != c.ok {
			t.Errorf("durationNs(%v) = %d, %v; want %d, %v", c.ms, got, ok, c.want, c.ok)
		}
	}
	// Every whole-ns duration (end − start)/1e6 converts back exactly.
	r := rand.New(rand.NewPCG(7, 7))
	for range 100000 {
		ns := r.Int64N(schemas.MaxDurationMs*1e6 + 1)
		if got, _ := durationNs(float64(ns) / 1e6); got != uint64(ns) {
			t.Fatalf("%d ns → %v ms → %d ns", ns, float64(ns)/1e6, got)
		}
	}
}

// TestInvalidDurationsNotLatencies: spans with a NaN, negative, infinite
// or over-24h duration count in the mix and in n, not in the variance,
// and latency_samples says how many did.
func TestInvalidDurationsNotLatencies(t *testing.T) {
	p := mustNew(t, testConfig())
	r := rand.New(rand.NewPCG(8, 8))
	k := schemas.Key{Tenant: "t", Service: "s"}
	var good []uint64
	for i := range 60 {
		d := float64(100 + i)
		s := proctest.NewSpan(r, k, "a", t0+int64(i)*int64(time.Second), d)
		p.ObserveSpan(s.Key, &s)
		good = append(good, uint64(d*1e6))
	}
	for i, d := range []float64{math.NaN(), -5, math.Inf(1), schemas.MaxDurationMs * 2} {
		s := proctest.NewSpan(r, k, "b", t0+int64(i)*int64(time.Second), 1)
		s.DurationMs = d
		p.ObserveSpan(s.Key, &s)
	}
	var out proctest.Collector
	p.Evaluate(t0+5*minute, &out)
	v := out.Verdicts[0]
	n, _ := v.Detail("n")
	ls, _ := v.Detail("latency_samples")
	vr, _ := v.Detail("variance_ms2")
	cats, _ := v.Detail("categories")
	if n != 64 || ls != 60 || cats != 2 || vr != exactVariance(good) {
		t.Fatalf("n %v latency_samples %v categories %v variance %v; want 64, 60, 2, %v", n, ls, cats, vr, exactVariance(good))
	}
}
