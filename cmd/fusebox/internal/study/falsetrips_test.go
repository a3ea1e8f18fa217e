package study

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestFalseTripsShort runs the false-trip study on 3 h of stationary demo
// traffic with every processor at its defaults: no breaker trip at all
// (the defaults' budget is at most 1 per 1,000 key-days; 3 h of 36 keys
// is 4.5 key-days, so even one trip would be 200x over it), every SLO
// judged, and the table reproducible.
func TestFalseTripsShort(t *testing.T) {
	cfg := FalseTripsConfig{Duration: 3 * time.Hour, Rate: 50, Seed: 3}
	var out bytes.Buffer
	tab, err := FalseTrips(&out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if len(tab.Rows) != 7 {
		t.Fatalf("%d rows, want one per SLO (7):\n%s", len(tab.Rows), out.String())
	}
	for _, r := range tab.Rows {
		if r.Evaluations == 0 || r.Keys == 0 || !(r.KeyDays > 0) {
			t.Errorf("%s: never judged: %+v", r.SLO, r)
		}
		if r.Trips != 0 {
			t.Errorf("%s: %d false trips on stationary traffic", r.SLO, r.Trips)
		}
	}
	if !strings.Contains(out.String(), "breaker trips / 1000 key-days") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestPoissonRate(t *testing.T) {
	r, lo, hi := poissonRate(0, 1000)
	if r != 0 || lo != 0 || hi < 3.688 || hi > 3.690 {
		t.Errorf("0 in 1000: %v [%v, %v], want 0 [0, 3.689]", r, lo, hi)
	}
	r, lo, hi = poissonRate(10, 1000)
	if r != 10 || lo < 4.79 || lo > 4.80 || hi < 18.38 || hi > 18.40 {
		t.Errorf("10 in 1000: %v [%v, %v], want 10 [4.795, 18.39]", r, lo, hi)
	}
}
