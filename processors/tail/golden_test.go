package tail

import (
	"reflect"
	"testing"
	"time"

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
	p := newTail(t, testConfig())
	var col collect
	drive(t, p, tr.spans(), 0, 0, 0, &col)
	validateAll(t, col.verdicts)
	checkGolden(t, "tail_blowup.txt", formatVerdicts(col.verdicts))

	start := t0 + int64(tr.incidentAt)
	every := int64(p.Interval())
	firstAlert, firstBreach := int64(-1), int64(-1)
	for _, v := range col.verdicts {
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
		p := newTail(t, testConfig())
		var col collect
		drive(t, p, tr.spans(), 0, 0, 0, &col)
		validateAll(t, col.verdicts)
		warns, full := 0, 0
		largest, largestLower := 0.0, 0.0
		for _, v := range col.verdicts {
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
			seed, len(col.verdicts), warns, largest, largestLower, truth, budget)
	}
}

func TestDeterministicAndOrderIndependent(t *testing.T) {
	tr := blowUp(11)
	tr.duration = 75 * time.Minute
	spans := tr.spans()
	run := func(sp []schemas.Span) []schemas.Verdict {
		c := testConfig()
		c.MaxSamplesPerSlot = 300 // caps bite: 600 spans per key per minute
		p := newTail(t, c)
		var col collect
		drive(t, p, sp, 0, 0, 0, &col)
		return col.verdicts
	}
	a, b := run(spans), run(spans)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same input twice gave different verdicts")
	}
	if s := run(shuffleWithin(spans, int64(time.Minute), 99)); !reflect.DeepEqual(a, s) {
		t.Fatal("spans shuffled within each minute gave different verdicts")
	}
	if rate, _ := a[len(a)-1].Detail(DetailSampleRate); !(rate < 1) {
		t.Fatalf("sample rate %v: the caps did not bite", rate)
	}
}
