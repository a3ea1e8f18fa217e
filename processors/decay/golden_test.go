package decay

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// incidents: from +60m the alignment of keyLarge slides 0.03 per minute
// (to 0.45 below normal by +75m, then stays there); from +90m to +100m a
// scorer outage writes 0 for one score in ten on keySmall.
var incidents = script{declineFrom: t0 + 60*minute, declinePerMin: 0.03, zeroBurstFrom: t0 + 90*minute, zeroBurstTo: t0 + 100*minute}

func statuses(vs []schemas.Verdict, key schemas.Key, st schemas.Status, from, to int64) []int64 {
	var at []int64
	for i := range vs {
		v := &vs[i]
		if v.Key == key && v.Status == st && v.WindowEndUnixNano >= from && v.WindowEndUnixNano < to {
			at = append(at, (v.WindowEndUnixNano-t0)/minute)
		}
	}
	return at
}

func TestGoldenIncidents(t *testing.T) {
	spans := generate(1, t0, t0+twoHours, incidents)
	vs := drive(t, mustNew(t, DefaultConfig()), spans, t0, t0+twoHours)
	golden(t, "incidents.txt", lines(vs))

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
		vs := drive(t, mustNew(t, DefaultConfig()), spans, t0+30*minute, t0+75*minute)
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
			vs := drive(t, mustNew(t, cfg), spans, t0, t0+twoHours)
			worst := 0.0
			for i := range vs {
				v := &vs[i]
				if v.Status == schemas.StatusBreach || v.Status == schemas.StatusWarn {
					t.Errorf("seed %d %s: %s", seed, m, line(v))
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
	a := lines(drive(t, mustNew(t, cfg), spans, t0, t0+90*minute))
	if b := lines(drive(t, mustNew(t, cfg), spans, t0, t0+90*minute)); a != b {
		t.Fatal("the same input twice gave different verdicts")
	}
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 3 {
		sh := shuffleWithinSlots(spans, int64(cfg.Every), r)
		if c := lines(drive(t, mustNew(t, cfg), sh, t0, t0+90*minute)); c != a {
			t.Fatalf("shuffle %d within slots changed the verdicts", i)
		}
	}
}

func TestSnapshotRestore(t *testing.T) {
	spans := generate(3, t0, t0+twoHours, incidents)
	end := t0 + twoHours
	whole := lines(drive(t, mustNew(t, DefaultConfig()), spans, t0, end))
	for _, cut := range []int64{t0 + 17*minute, t0 + 62*minute + 7e9, t0 + 95*minute} {
		var before, after []schemas.Span
		for _, s := range spans {
			if s.EndUnixNano < cut {
				before = append(before, s)
			} else {
				after = append(after, s)
			}
		}
		every := 5 * minute
		p := mustNew(t, DefaultConfig())
		first := drive(t, p, before, t0, floorDiv(cut-t0, every)*every+t0)
		snap, _ := p.MarshalBinary()
		q := mustNew(t, DefaultConfig())
		if err := q.UnmarshalBinary(snap); err != nil {
			t.Fatal(err)
		}
		if again, _ := q.MarshalBinary(); !bytes.Equal(snap, again) {
			t.Fatal("restored state marshals to different bytes")
		}
		from := floorDiv(cut-t0, every)*every + t0
		restA := drive(t, p, after, from, end)
		restB := drive(t, q, after, from, end)
		if lines(restA) != lines(restB) {
			t.Fatalf("cut at +%ds: restored processor diverged", (cut-t0)/1e9)
		}
		if lines(append(first, restA...)) != whole {
			t.Fatalf("cut at +%ds: split run differs from the uninterrupted one", (cut-t0)/1e9)
		}
	}
}
