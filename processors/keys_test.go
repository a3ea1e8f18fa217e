package processors

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

func TestSortedKeysFollowsKeyString(t *testing.T) {
	// "a-b" sorts before "a/..." as a string although "a" < "a-b" field by
	// field: the order is Key.String's, the one verdicts go out in.
	m := map[schemas.Key]int{
		{Tenant: "a-b"}:                  1,
		{Tenant: "a", Service: "x"}:      2,
		{Tenant: "a"}:                    3,
		{Tenant: "a/b"}:                  4, // escaped: "a%2Fb"
		{Tenant: "b", Variant: "*"}:      5,
		{Tenant: "", Model: "zz"}:        6,
		{Tenant: "a", Variant: "canary"}: 7,
	}
	want := make([]schemas.Key, 0, len(m))
	for k := range m {
		want = append(want, k)
	}
	slices.SortFunc(want, func(a, b schemas.Key) int { return strings.Compare(a.String(), b.String()) })
	if got := SortedKeys(m, nil); !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	var scratch KeyOrder
	for range 3 { // reused buffers give the same answer
		if got := SortedKeys(m, &scratch); !slices.Equal(got, want) {
			t.Fatalf("with scratch: got %v\nwant %v", got, want)
		}
	}
	if got := SortedKeys(map[schemas.Key]bool{}, &scratch); len(got) != 0 {
		t.Fatalf("empty map: %v", got)
	}
	allocs := testing.AllocsPerRun(100, func() { SortedKeys(m, &scratch) })
	// Key.String allocates once per key; the lists themselves do not.
	if allocs > float64(len(m)) {
		t.Fatalf("%v allocations per call with scratch, want at most %d", allocs, len(m))
	}
}

func TestFloor(t *testing.T) {
	for _, tc := range []struct{ t, w, floor, mod int64 }{
		{0, 10, 0, 0}, {9, 10, 0, 9}, {10, 10, 10, 0}, {-1, 10, -10, 9}, {-10, 10, -10, 0}, {-25, 10, -30, 5},
	} {
		if f, m := FloorTo(tc.t, tc.w), FloorMod(tc.t, tc.w); f != tc.floor || m != tc.mod {
			t.Errorf("FloorTo/FloorMod(%d, %d) = %d, %d; want %d, %d", tc.t, tc.w, f, m, tc.floor, tc.mod)
		}
	}
}

func TestAvalancheMatchesSpanHash(t *testing.T) {
	// SpanHash is FNV-1a over trace id then span id, then Avalanche.
	s := &schemas.Span{TraceID: schemas.TraceID{1, 2, 3}, SpanID: schemas.SpanID{4}}
	h := uint64(14695981039346656037)
	for _, c := range append(s.TraceID[:], s.SpanID[:]...) {
		h ^= uint64(c)
		h *= 1099511628211
	}
	if SpanHash(s) != Avalanche(h) {
		t.Fatal("SpanHash is not FNV-1a followed by Avalanche")
	}
	if Avalanche(0) != 0 || Avalanche(1) == 1 {
		t.Fatal("Avalanche is not the SplitMix64 finaliser")
	}
}

func TestFiniteValue(t *testing.T) {
	s := &schemas.Span{DurationMs: 12, TTFTMs: math.NaN(), TPOTMs: math.Inf(1), Has: schemas.HasTTFT | schemas.HasTPOT}
	for _, tc := range []struct {
		m    Metric
		want bool
	}{{MetricDuration, true}, {MetricTTFT, false}, {MetricTPOT, false}, {MetricConfidence, false}} {
		if _, ok := tc.m.FiniteValue(s); ok != tc.want {
			t.Errorf("%s: ok %v, want %v", tc.m, ok, tc.want)
		}
	}
}
