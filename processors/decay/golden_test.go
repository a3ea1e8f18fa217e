package decay

import (
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// incidents: from +60m the alignment of keyLarge slides 0.03 per minute
// (to 0.45 below normal by +75m, then stays there); from +90m to +100m a
// scorer outage writes 0 for one score in ten on keySmall.
var incidents = script{declineFrom: t0 + 60*minute, declinePerMin: 0.03, zeroBurstFrom: t0 + 90*minute, zeroBurstTo: t0 + 100*minute}

// statuses lists the minutes (since t0) of key's verdicts with status st
// and a window end in [from, to).
func statuses(vs []schemas.Verdict, key schemas.Key, st schemas.Status, from, to int64) []int64 {
	return proctest.Minutes(vs, t0, func(v *schemas.Verdict) bool {
		return v.Key == key && v.Status == st && v.WindowEndUnixNano >= from && v.WindowEndUnixNano < to
	})
}

func TestGoldenIncidents(t *testing.T) {
	spans := generate(1, t0, t0+twoHours, incidents)
	vs := proctest.Drive(t, mustNew(t, DefaultConfig()), spans, t0, t0+twoHours)
	proctest.Golden(t, "incidents.txt", proctest.Lines(vs, t0))

	// The decline is a breach within 2 evaluations (5m each) of its start.
	start := incidents.declineFrom
	b := statuses(vs, keyLarge, schemas.StatusBreach, start, t0+twoHours+1)
	if len(b) == 0 || b[0] > 70 {
		t.Errorf("decline from +60m: breaches at minutes %v, want the first by +70", b)
	}
	if b := statuses(vs, keyLarge, schemas.StatusBreach, t0, start+1); len(b) != 0 {
		t.Errorf("breaches before the decline: %v", b)
	}
	// The scorer outage (zeros) is not a decline: Theil–Sen holds.
	for _, k := range []schemas.Key{keySmall, keyCanary} {
		if b := statuses(vs, k, schemas.StatusBreach, t0, t0+twoHours+1); len(b) != 0 {
			t.Errorf("%v: breaches at %v", k, b)
		}
	}
}

// TestNoIncidentNoBreach: two hours of steady scores on several seeds give
// no breach and no warn, for alignment and for confidence.
// TestDeclineDetectedOnEverySeed: the 2-evaluation detection does not hang
// on one lucky seed.
func TestDeclineDetectedOnEverySeed(t *testing.T) {
	for seed := uint64(2); seed <= 6; seed++ {
		spans := generate(seed, t0+30*minute, t0+75*minute, incidents)
		vs := proctest.Drive(t, mustNew(t, DefaultConfig()), spans, t0+30*minute, t0+75*minute)
		b := statuses(vs, keyLarge, schemas.StatusBreach, t0, t0+75*minute)
		if len(b) == 0 || b[0] > 70 || b[0] < 65 {
			t.Errorf("seed %d: breaches at minutes %v, want the first at +65 or +70", seed, b)
		}
	}
}

func TestNoIncidentNoBreach(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		spans := generate(seed, t0, t0+twoHours, script{})
		for _, m := range []string{"alignment", "confidence"} {
			cfg := DefaultConfig()
			cfg.Metric = processorsMetric(m)
			vs := proctest.Drive(t, mustNew(t, cfg), spans, t0, t0+twoHours)
			worst := 0.0
			for i := range vs {
				v := &vs[i]
				if v.Status == schemas.StatusBreach || v.Status == schemas.StatusWarn {
					t.Errorf("seed %d %s: %s", seed, m, proctest.Line(v, t0))
				}
				if v.Status == schemas.StatusOK {
					worst = min(worst, v.Value)
				}
			}
			t.Logf("seed %d %s: %d verdicts, most negative decline %.4f (limit %.2f)", seed, m, len(vs), worst, cfg.Limit)
		}
	}
}

func TestDeterministicAndOrderIndependent(t *testing.T) {
	spans := generate(2, t0, t0+90*minute, incidents)
	cfg := DefaultConfig()
	cfg.TheilSenMaxPoints = 100 // the thinning bites harder
	r := rand.New(rand.NewPCG(7, 7))
	shuffle := func(s []schemas.Span) []schemas.Span { return proctest.ShuffleWithinSlots(s, int64(cfg.Every), r) }
	proctest.OrderIndependent(t, spans, shuffle, 3, func(s []schemas.Span) []schemas.Verdict {
		return proctest.Drive(t, mustNew(t, cfg), s, t0, t0+90*minute)
	})
}

func TestSnapshotRestore(t *testing.T) {
	spans := generate(3, t0, t0+twoHours, incidents)
	end := t0 + twoHours
	whole := proctest.Drive(t, mustNew(t, DefaultConfig()), spans, t0, end)
	newP := func() processors.Processor { return mustNew(t, DefaultConfig()) }
	for _, cut := range []int64{t0 + 17*minute, t0 + 62*minute + 7e9, t0 + 95*minute} {
		proctest.Resume(t, newP, proctest.SpanEvents(spans), t0, end, cut, whole)
	}
}
