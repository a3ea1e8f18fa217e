package study

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStallQuantile checks the mixture's exact quantile against a large
// seeded sample's empirical quantile (2M draws: the P99.9's standard error
// is ~0.7%), and the CDF's limits.
func TestStallQuantile(t *testing.T) {
	f := StallMixture()
	q := f.Quantile(0.999)
	if c := stallCDF(q); math.Abs(c-0.999) > 1e-9 {
		t.Fatalf("CDF(Q(0.999)) = %v", c)
	}
	r := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 2_000_000)
	for i := range xs {
		xs[i] = f.Sample(r)
	}
	slices.Sort(xs)
	emp := xs[int(0.999*float64(len(xs)))]
	if math.Abs(emp/q-1) > 0.03 {
		t.Errorf("true P99.9 %.4g, sample P99.9 %.4g", q, emp)
	}
	if stallCDF(0) != 0 || stallCDF(1e12) < 1-1e-9 {
		t.Error("CDF limits")
	}
}
