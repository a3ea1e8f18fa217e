package schemas

// MaxEvidencePoints bounds each point list of an Evidence: a verdict's
// evidence is at most 3 lists of this many (x, p) pairs (~3 KiB), whatever
// the window's size.
const MaxEvidencePoints = 64

// Evidence is a small, bounded summary of the data behind a verdict, for
// charts (the live page of internal/ui): a drift verdict's two empirical
// CDFs, a tail verdict's exceedances over the POT threshold. It is derived
// from the window deterministically (no clock), so a replay yields the same
// evidence; it lives in memory only — no codec writes it (JSONL, Kafka and
// ClickHouse verdicts are unchanged) and a verdict decoded from the wire
// has none.
type Evidence struct {
	// Current and Reference are the empirical CDFs of a drift verdict's two
	// samples (current window or canary; reference window or baseline).
	Current, Reference Points
	// KSAt is the value x at which the KS distance
	// D = sup_x |F_current(x) − F_reference(x)| is attained (the verdict's
	// Value is D), metric unit.
	KSAt float64
	// Exceedances are a tail verdict's excesses y = x − u over the POT
	// threshold u, sorted, with plotting positions P_i = (i − 0.5)/m
	// (m = the number of exceedances): the sample side of a QQ plot
	// against the fitted GPD(xi, sigma) of the verdict's details.
	Exceedances Points
	// Scopes are the instrumentation scopes (Span.Scope, "unknown" when
	// the span had none) of the calls behind a verdict that found no
	// sample of its metric (the no_samples verdicts of tail, drift and
	// decay): what wrote the spans that lack it. Sorted, at most a few.
	Scopes []string
}

// Points are up to MaxEvidencePoints (X, P) pairs picked at evenly spaced
// ranks of a sorted sample of N values; P is the CDF (or plotting
// position) at X, in (0, 1]. Empty when N is 0.
type Points struct {
	X, P []float64
	N    int
}

// ECDFPoints thins sorted (ascending, finite) to at most max points of its
// empirical CDF: the points at ranks r_j = round(j·(n−1)/(k−1)), j=0..k−1
// (k = min(n, max)), with P = (r_j+1)/n, so the first and last values are
// always kept. The slices are new (sorted is not retained).
func ECDFPoints(sorted []float64, max int) Points {
	return thin(sorted, max, func(r, n int) float64 { return float64(r+1) / float64(n) })
}

// PlottingPoints is ECDFPoints with the plotting positions
// P = (r_j + 0.5)/n instead of the ECDF (Hazen's, which keep P < 1 so
// that the model quantile at P is finite).
func PlottingPoints(sorted []float64, max int) Points {
	return thin(sorted, max, func(r, n int) float64 { return (float64(r) + 0.5) / float64(n) })
}

func thin(sorted []float64, max int, p func(r, n int) float64) Points {
	n := len(sorted)
	k := min(n, max)
	out := Points{N: n}
	if k <= 0 {
		return out
	}
	out.X, out.P = make([]float64, k), make([]float64, k)
	for j := 0; j < k; j++ {
		r := 0
		if k > 1 {
			// Integer arithmetic: rounding is the same on every platform.
			r = (2*j*(n-1) + (k - 1)) / (2 * (k - 1))
		}
		out.X[j], out.P[j] = sorted[r], p(r, n)
	}
	return out
}
