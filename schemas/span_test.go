package schemas

import (
	"math"
	"testing"
)

// Derive against values computed by hand.
func TestSpanDerive(t *testing.T) {
	const start = int64(1_800_000_000_000_000_000)
	for _, tc := range []struct {
		name          string
		durNs         int64
		ttftMs        float64
		out           int64
		has           Fields
		wantDur       float64
		wantTPOT      float64
		wantTPOTValid bool
	}{
		// 1.5 s, first token at 250 ms, 11 tokens: 10 gaps of 125 ms.
		{"tpot", 1_500_000_000, 250, 11, HasTTFT | HasOutputTokens, 1500, 125, true},
		// One token: no gap between tokens, no TPOT.
		{"one token", 800_000_000, 300, 1, HasTTFT | HasOutputTokens, 800, 0, false},
		// No TTFT: the time of the first token is unknown.
		{"no ttft", 2_000_000_000, 0, 40, HasOutputTokens, 2000, 0, false},
		// Sub-millisecond precision is kept.
		{"fraction", 1_234_567, 0, 0, 0, 1.234567, 0, false},
	} {
		sp := Span{StartUnixNano: start, EndUnixNano: start + tc.durNs, TTFTMs: tc.ttftMs, OutputTokens: tc.out, Has: tc.has | HasTPOT}
		sp.Derive()
		if math.Abs(sp.DurationMs-tc.wantDur) > 1e-9 {
			t.Errorf("%s: DurationMs %v, want %v", tc.name, sp.DurationMs, tc.wantDur)
		}
		if got := sp.Has&HasTPOT != 0; got != tc.wantTPOTValid || (got && math.Abs(sp.TPOTMs-tc.wantTPOT) > 1e-9) {
			t.Errorf("%s: TPOT %v (set %v), want %v (set %v)", tc.name, sp.TPOTMs, got, tc.wantTPOT, tc.wantTPOTValid)
		}
	}
}
