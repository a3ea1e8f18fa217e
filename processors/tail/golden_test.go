package tail

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// blowUp is the scripted incident: from minute 60, 3% of the first key's
// calls take xm*U^(-1/1.2) ms with xm = 3 s (a Pareto tail with infinite
// variance), which puts the key's P99.9 near 40 s against a 6 s budget.
func blowUp(seed uint64) traffic {
	tr := baseTraffic(seed)
	tr.incident, tr.incidentKey, tr.incidentAt = true, 0, 60*time.Minute
	tr.fraction, tr.xm, tr.alpha = 0.03, 3000, 1.2
	return tr
}

func TestGoldenTailBlowUpDetected(t *testing.T) {
	tr := blowUp(1)
	vs := proctest.ReplayAll(t, newTail(t, testConfig()), tr.spans())
	proctest.Golden(t, "tail_blowup.txt", proctest.KVLines(vs, t0, true))

	start := t0 + int64(tr.incidentAt)
	every := int64(testConfig().Every)
	firstAlert, firstBreach := int64(-1), int64(-1)
	for _, v := range vs {
		if v.Key != tr.keys[tr.incidentKey] {
			if v.Status == schemas.StatusBreach || v.Status == schemas.StatusWarn {
				t.Errorf("healthy key %s: %s at %d min", v.Key.String(), v.Status, (v.WindowEndUnixNano-t0)/int64(time.Minute))
			}
			continue
		}
		end := v.WindowEndUnixNano
		if end <= start {
			if v.Status == schemas.StatusBreach || v.Status == schemas.StatusWarn {
				t.Errorf("%s before the incident, at %d min", v.Status, (end-t0)/int64(time.Minute))
			}
			continue
		}
		// The evaluation index after the start: 1 is the first boundary
		// whose window holds incident spans.
		idx := (end - start + every - 1) / every
		if firstAlert < 0 && v.Status != schemas.StatusOK {
			firstAlert = idx
		}
		if firstBreach < 0 && v.Status == schemas.StatusBreach {
			firstBreach = idx
		}
	}
	if firstAlert < 1 || firstAlert > 2 {
		t.Errorf("first warn/breach at evaluation %d after the incident, want within 2", firstAlert)
	}
	if firstBreach < 1 || firstBreach > 2 {
		t.Errorf("first breach at evaluation %d after the incident, want within 2", firstBreach)
	}
}

func TestNoIncidentNoBreach(t *testing.T) {
	budget := testConfig().Budget
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		tr := baseTraffic(seed) // 2 h, 3 keys, 10 spans/s each
		truth := tr.trueQuantile(0.999)
		if budget < 1.5*truth {
			t.Fatalf("budget %v not comfortably above the true P99.9 %v", budget, truth)
		}
		vs := proctest.ReplayAll(t, newTail(t, testConfig()), tr.spans())
		warns, full := 0, 0
		largest, largestLower := 0.0, 0.0
		for _, v := range vs {
			largest, largestLower = max(largest, v.Value), max(largestLower, v.Lower)
			switch v.Status {
			case schemas.StatusBreach:
				t.Errorf("seed %d: false breach on %s at %d min: %v [%v, %v]", seed, v.Key.String(),
					(v.WindowEndUnixNano-t0)/int64(time.Minute), v.Value, v.Lower, v.Upper)
			case schemas.StatusWarn:
				warns++
			}
			// A full window (6000 spans) must estimate the truth to 25%.
			if v.N == 6000 {
				full++
				if v.Value < 0.75*truth || v.Value > 1.25*truth {
					t.Errorf("seed %d: estimate %v, true P99.9 %v", seed, v.Value, truth)
				}
			}
		}
		if full < 3*100 {
			t.Errorf("seed %d: only %d full-window verdicts", seed, full)
		}
		t.Logf("seed %d: %d verdicts, %d warns; largest estimate %.0f, largest lower bound %.0f (true %.0f, budget %.0f)",
			seed, len(vs), warns, largest, largestLower, truth, budget)
	}
}

func TestDeterministicAndOrderIndependent(t *testing.T) {
	tr := blowUp(11)
	tr.duration = 75 * time.Minute
	spans := tr.spans()
	c := testConfig()
	c.MaxSamplesPerSlot = 300 // caps bite: 600 spans per key per minute
	r := rand.New(rand.NewPCG(99, 1))
	shuffle := func(s []schemas.Span) []schemas.Span { return proctest.ShuffleWithinSlots(s, int64(c.Every), r) }
	a := proctest.OrderIndependent(t, spans, shuffle, 1, func(s []schemas.Span) []schemas.Verdict {
		return proctest.ReplayAll(t, newTail(t, c), s)
	})
	if rate, _ := a[len(a)-1].Detail(DetailSampleRate); !(rate < 1) {
		t.Fatalf("sample rate %v: the caps did not bite", rate)
	}
}
