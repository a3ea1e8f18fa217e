package corrections

import (
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

const twoHours = 120 * minute

// incidents: users correct 60% of keySearch's answers from +60m to +75m;
// the canary's answers get corrected 30% of the time from +90m.
var incidents = script{spikeFrom: t0 + 60*minute, spikeTo: t0 + 75*minute, canaryFrom: t0 + 90*minute}

// minutesWith lists the minutes (since t0) of key's verdicts on metric with
// status st.
func minutesWith(vs []schemas.Verdict, key schemas.Key, metric string, st schemas.Status) []int64 {
	return proctest.Minutes(vs, t0, func(v *schemas.Verdict) bool { return v.Key == key && v.Metric == metric && v.Status == st })
}

func TestGoldenIncidents(t *testing.T) {
	evs := generate(1, t0, t0+twoHours, incidents)
	vs := proctest.DriveEvents(t, mustNew(t, DefaultConfig()), evs, t0, t0+twoHours)
	proctest.Golden(t, "incidents.txt", proctest.Lines(vs, t0))
	checkIncidents(t, vs)
}

func checkIncidents(t *testing.T, vs []schemas.Verdict) {
	t.Helper()
	// Correction spike: breach within 2 evaluations (1m each) of +60m.
	b := minutesWith(vs, keySearch, MetricRate, schemas.StatusBreach)
	if len(b) == 0 || b[0] < 61 || b[0] > 62 {
		t.Errorf("spike from +60m: correction_rate breaches at %v, want the first at +61 or +62", b)
	}
	// Canary: breach within 3 evaluations of +90m (alpha 1e-5, set for
	// the false-trip target, costs one evaluation on this 3.5x canary:
	// z = 3.56 at +91 no longer breaches).
	c := minutesWith(vs, keyCanary, MetricCanary, schemas.StatusBreach)
	if len(c) == 0 || c[0] < 91 || c[0] > 93 {
		t.Errorf("canary from +90m: canary breaches at %v, want the first at +91 to +93", c)
	}
	// Nothing else breaches: the other keys, and before the incidents.
	for _, k := range []schemas.Key{keyBase, keyOther} {
		if b := minutesWith(vs, k, MetricRate, schemas.StatusBreach); len(b) != 0 {
			t.Errorf("%v breaches at %v", k, b)
		}
	}
	for _, m := range minutesWith(vs, keyCanary, MetricRate, schemas.StatusBreach) {
		if m <= 90 {
			t.Errorf("canary rate breach at +%dm, before the canary went bad", m)
		}
	}
	// Stray corrections are reported, attributed by their own fields.
	stray := schemas.Key{Tenant: "acme", Model: "gpt-large", Variant: "baseline"}
	if n := len(minutesWith(vs, stray, MetricUnjoined, schemas.StatusOK)); n < 100 {
		t.Errorf("unjoined corrections reported in %d evaluations, want nearly all 120", n)
	}
}

// TestDetectionOnEverySeed: the incidents are found within 2 evaluations
// (the canary within 3) on other seeds too.
func TestDetectionOnEverySeed(t *testing.T) {
	for seed := uint64(2); seed <= 6; seed++ {
		evs := generate(seed, t0+40*minute, t0+95*minute, incidents)
		vs := proctest.DriveEvents(t, mustNew(t, DefaultConfig()), evs, t0+40*minute, t0+95*minute)
		if b := minutesWith(vs, keySearch, MetricRate, schemas.StatusBreach); len(b) == 0 || b[0] > 62 || b[0] < 61 {
			t.Errorf("seed %d: spike breaches at %v", seed, b)
		}
		if c := minutesWith(vs, keyCanary, MetricCanary, schemas.StatusBreach); len(c) == 0 || c[0] > 93 || c[0] < 91 {
			t.Errorf("seed %d: canary breaches at %v", seed, c)
		}
	}
}

// TestNoIncidentNoBreach: two hours of normal corrections on several seeds
// give no breach at all.
func TestNoIncidentNoBreach(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		evs := generate(seed, t0, t0+twoHours, script{})
		vs := proctest.DriveEvents(t, mustNew(t, DefaultConfig()), evs, t0, t0+twoHours)
		warns, minP, maxRate := 0, 1.0, 0.0
		for i := range vs {
			v := &vs[i]
			if v.Status == schemas.StatusBreach {
				t.Errorf("seed %d: %s", seed, proctest.Line(v, t0))
			}
			if v.Status == schemas.StatusWarn {
				warns++
			}
			if v.Metric == MetricCanary && v.Status != schemas.StatusInsufficientData {
				minP = min(minP, detail(v, "p"))
			}
			if v.Metric == MetricRate {
				maxRate = max(maxRate, v.Value)
			}
		}
		t.Logf("seed %d: %d verdicts, %d warns, highest rate %.4f, smallest canary p %.4f", seed, len(vs), warns, maxRate, minP)
	}
}

func TestDeterministicAndOrderIndependent(t *testing.T) {
	evs := generate(2, t0+50*minute, t0+100*minute, incidents)
	cfg := DefaultConfig()
	cfg.MaxIndexedSpans = 5000 // the cap bites
	r := rand.New(rand.NewPCG(5, 5))
	shuffle := func(e []proctest.Event) []proctest.Event {
		return proctest.ShuffleEventsWithinSlots(e, int64(cfg.Every), r)
	}
	proctest.OrderIndependent(t, evs, shuffle, 3, func(e []proctest.Event) []schemas.Verdict {
		return proctest.DriveEvents(t, mustNew(t, cfg), e, t0+50*minute, t0+100*minute)
	})
}

func TestSnapshotRestore(t *testing.T) {
	evs := generate(3, t0, t0+twoHours, incidents)
	end := t0 + twoHours
	whole := proctest.DriveEvents(t, mustNew(t, DefaultConfig()), evs, t0, end)
	newP := func() processors.Processor { return mustNew(t, DefaultConfig()) }
	for _, cut := range []int64{t0 + 30*minute + 20*sec, t0 + 61*minute + 59*sec, t0 + 90*minute + 30*sec} {
		proctest.Resume(t, newP, evs, t0, end, cut, whole)
	}
	// Damage a snapshot taken mid-run, with indexed spans, counts and
	// pending corrections in it: an empty processor's snapshot is little
	// more than a header, so its truncations would test only that.
	cut := t0 + 61*minute + 59*sec
	var before []proctest.Event
	for _, e := range evs {
		if e.T < cut {
			before = append(before, e)
		}
	}
	mid := mustNew(t, DefaultConfig())
	proctest.DriveEvents(t, mid, before, t0, t0+61*minute)
	snap, err := mid.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := mustNew(t, DefaultConfig()).MarshalBinary()
	if mid.Keys() == 0 || len(snap) < 10*len(empty) {
		t.Fatalf("mid-run snapshot: %d keys, %d bytes (empty: %d); want state in it", mid.Keys(), len(snap), len(empty))
	}
	t.Logf("damaging a %d-byte snapshot of %d keys (empty: %d bytes)", len(snap), mid.Keys(), len(empty))
	proctest.RejectsDamage(t, newP, snap, ErrCorrupt)
	if err := mustNew(t, DefaultConfig()).UnmarshalBinary([]byte{2}); err == nil {
		t.Error("snapshot of an unknown version accepted")
	}
}
