package breaker

import (
	"strconv"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// BenchmarkObserve feeds a mixed stream over 1,000 keys (one verdict per
// key per minute, 5% breaches) to a breaker with the default policy.
func BenchmarkObserve(b *testing.B) {
	const nkeys = 1000
	vs := make([]schemas.Verdict, 0, 60*nkeys)
	for m := 0; m < 60; m++ {
		for i := 0; i < nkeys; i++ {
			k := schemas.Key{Tenant: "t" + strconv.Itoa(i), Service: "chat", Model: "big", Variant: "stable"}
			st := schemas.StatusOK
			if (i*7+m*13)%20 == 0 {
				st = schemas.StatusBreach
			}
			vs = append(vs, mkVerdict("tail", "latency", "duration_ms", k, at(float64(m)), st))
		}
	}
	b.ReportAllocs()
	var br *Breaker
	for i := 0; b.Loop(); i++ {
		j := i % len(vs)
		if j == 0 {
			br, _ = New(DefaultPolicy())
		}
		br.Observe(vs[j])
	}
}

// BenchmarkSnapshot marshals the state of 1,000 targets with histories.
func BenchmarkSnapshot(b *testing.B) {
	br, _ := New(DefaultPolicy())
	for m := 0; m < 10; m++ {
		for i := 0; i < 1000; i++ {
			k := schemas.Key{Tenant: "t" + strconv.Itoa(i), Service: "chat", Model: "big", Variant: "stable"}
			br.Observe(mkVerdict("tail", "latency", "duration_ms", k, at(float64(m)), schemas.StatusBreach))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.MarshalBinary(); err != nil {
			b.Fatal(err)
		}
	}
}
