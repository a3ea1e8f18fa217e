package study

import (
	"bytes"
	"testing"
	"time"
)

// TestSequentialShort compares the page methods on 3 h of traffic failing
// at exactly the budget and on two scripted bursts: neither method trips
// on the quiet traffic; both catch the large burst within 2 evaluations;
// the CUSUM pages the 2% burst (burn 20) within 10 evaluations, where the
// workbook's 1h rule needs about 43 minutes of it; every trip follows its
// breach; a burst run gives the same delays a second time. (1h of history
// before each burst, not the study's 6h, to keep it short.)
func TestSequentialShort(t *testing.T) {
	cfg := SequentialConfig{Rate: 50, QuietDuration: 3 * time.Hour, Magnitudes: []float64{0.5, 0.02}, History: time.Hour, Seed: 2}
	var out bytes.Buffer
	tab, err := Sequential(&out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if len(tab.Rows) != 2 {
		t.Fatalf("%d rows, want multiwindow and cusum", len(tab.Rows))
	}
	mw, cu := tab.Rows[0], tab.Rows[1]
	for _, r := range tab.Rows {
		if r.Quiet.Trips != 0 || !(r.Quiet.KeyDays >= 4) {
			t.Errorf("%s: %d false trips in %.1f key-days at the budget", r.Method, r.Quiet.Trips, r.Quiet.KeyDays)
		}
		if r.BreachAt[0] < 1 || r.BreachAt[0] > 2 {
			t.Errorf("%s: 50%% errors paged after %d evaluations, want 1..2", r.Method, r.BreachAt[0])
		}
		for i := range r.TripAt {
			if r.TripAt[i] != 0 && r.TripAt[i] < r.BreachAt[i] {
				t.Errorf("%s: burst %d tripped at %d before its breach at %d", r.Method, i, r.TripAt[i], r.BreachAt[i])
			}
		}
	}
	if cu.BreachAt[1] < 1 || cu.BreachAt[1] > 10 {
		t.Errorf("cusum paged the 2%% burst after %d evaluations, want 1..10", cu.BreachAt[1])
	}
	if mw.BreachAt[1] != 0 && mw.BreachAt[1] <= cu.BreachAt[1] {
		t.Errorf("multiwindow paged the 2%% burst after %d evaluations, not later than cusum's %d", mw.BreachAt[1], cu.BreachAt[1])
	}
	b, tr, err := burstDelay("cusum", cfg.Rate, 0.02, cfg.History, cfg.Seed+1)
	if err != nil || b != cu.BreachAt[1] || tr != cu.TripAt[1] {
		t.Errorf("the 2%% burst again: breach %d trip %d (%v), first time %d %d", b, tr, err, cu.BreachAt[1], cu.TripAt[1])
	}
}
