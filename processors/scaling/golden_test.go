package scaling

import (
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

const twoHours = 120 * minute

var (
	acme   = schemas.Key{Tenant: "acme", Service: "chat-api", Model: "*", Variant: "*"}
	globex = schemas.Key{Tenant: "globex", Service: "chat-api", Model: "*", Variant: "*"}
)

// incidents: a traffic surge with a wide mix and long latencies on acme
// from minute 60 to 80, a quiet batch-only period on globex from minute 90.
var incidents = script{surgeFrom: t0 + 60*minute, surgeTo: t0 + 80*minute, quietFrom: t0 + 90*minute, quietTo: t0 + twoHours}

// firstWith returns the window end of the first verdict of key with the
// given status and decision at or after from, and false when none.
func firstWith(vs []schemas.Verdict, key schemas.Key, st schemas.Status, d Decision, from int64) (int64, bool) {
	for i := range vs {
		v := &vs[i]
		dec, _ := v.Detail("decision")
		if v.Key == key && v.Status == st && Decision(dec) == d && v.WindowEndUnixNano >= from {
			return v.WindowEndUnixNano, true
		}
	}
	return 0, false
}

// count is the number of key's verdicts with status st and a window end in
// [from, to).
func count(vs []schemas.Verdict, key schemas.Key, st schemas.Status, from, to int64) int {
	return len(proctest.Minutes(vs, t0, func(v *schemas.Verdict) bool {
		return v.Key == key && v.Status == st && v.WindowEndUnixNano >= from && v.WindowEndUnixNano < to
	}))
}

func TestGoldenIncidentsDefaultConfig(t *testing.T) {
	spans := generate(1, t0, t0+twoHours, incidents)
	vs := proctest.Drive(t, mustNew(t, testConfig()), spans, t0, t0+twoHours)
	proctest.Golden(t, "incidents_default.txt", proctest.Lines(vs, t0))

	// Scale out within 2 evaluations (1m each) of the surge.
	start := incidents.surgeFrom
	at, ok := firstWith(vs, acme, schemas.StatusBreach, ScaleOut, start)
	if !ok || at > start+2*minute {
		t.Errorf("surge at +60m: first scale-out at +%dm (found %v), want by +62m", (at-t0)/minute, ok)
	}
	if n := count(vs, acme, schemas.StatusBreach, t0, start); n != 0 {
		t.Errorf("%d scale-outs before the surge", n)
	}
	// With the defaults (5m window, 3 low windows) the scale-in hint needs
	// the window to fill with quiet traffic and then 3 low evaluations:
	// structurally Window/Every + ScaleInAfter - 1 = 7 evaluations.
	q := incidents.quietFrom
	at, ok = firstWith(vs, globex, schemas.StatusWarn, ScaleIn, q)
	if !ok || at != q+7*minute {
		t.Errorf("quiet from +90m: first scale-in hint at +%dm (found %v), want exactly +97m", (at-t0)/minute, ok)
	}
	if n := count(vs, globex, schemas.StatusWarn, t0, q); n != 0 {
		t.Errorf("%d scale-in hints before the quiet period", n)
	}
	if n := count(vs, globex, schemas.StatusBreach, t0, t0+twoHours); n != 0 {
		t.Errorf("%d scale-outs on globex, which never surges", n)
	}
}

func TestGoldenIncidentsFastConfig(t *testing.T) {
	spans := generate(1, t0, t0+twoHours, incidents)
	vs := proctest.Drive(t, mustNew(t, fastConfig()), spans, t0, t0+twoHours)
	proctest.Golden(t, "incidents_fast.txt", proctest.Lines(vs, t0))
	at, ok := firstWith(vs, acme, schemas.StatusBreach, ScaleOut, incidents.surgeFrom)
	if !ok || at > incidents.surgeFrom+2*minute {
		t.Errorf("surge: first scale-out at +%dm (found %v), want by +62m", (at-t0)/minute, ok)
	}
	at, ok = firstWith(vs, globex, schemas.StatusWarn, ScaleIn, incidents.quietFrom)
	if !ok || at > incidents.quietFrom+2*minute {
		t.Errorf("quiet: first scale-in hint at +%dm (found %v), want by +92m", (at-t0)/minute, ok)
	}
	// The surge ends at +80m: scale-outs stop once the window is clear.
	if n := count(vs, acme, schemas.StatusBreach, incidents.surgeTo+minute, t0+twoHours+1); n != 0 {
		t.Errorf("%d scale-outs after the surge ended", n)
	}
}

// TestNoIncidentNoAlarms: two hours of baseline traffic on several seeds,
// with both configurations, give only ok verdicts (hold): no scale-out and
// no scale-in hint.
func TestNoIncidentNoAlarms(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		spans := generate(seed, t0, t0+twoHours, script{})
		for _, cfg := range []Config{testConfig(), fastConfig()} {
			vs := proctest.Drive(t, mustNew(t, cfg), spans, t0, t0+twoHours)
			if len(vs) == 0 {
				t.Fatal("no verdicts")
			}
			var maxE, maxSD, minE float64 = 0, 0, 1
			for i := range vs {
				v := &vs[i]
				if v.Status != schemas.StatusOK {
					t.Errorf("seed %d window %s: %s", seed, cfg.Window, proctest.Line(v, t0))
				}
				sd, _ := v.Detail("stddev_ms")
				maxE, minE, maxSD = max(maxE, v.Value), min(minE, v.Value), max(maxSD, sd)
			}
			t.Logf("seed %d window %s: normalised entropy in [%.3f, %.3f], stddev up to %.0f ms (budget %.0f)", seed, cfg.Window, minE, maxE, maxSD, cfg.StdDevBudgetMs)
		}
	}
}

func TestDeterministicAndOrderIndependent(t *testing.T) {
	spans := generate(2, t0, t0+40*minute, script{surgeFrom: t0 + 10*minute, surgeTo: t0 + 20*minute, quietFrom: t0 + 25*minute, quietTo: t0 + 40*minute})
	cfg := testConfig()
	cfg.MaxCategories = 3 // make the category cap bite
	r := rand.New(rand.NewPCG(9, 9))
	shuffle := func(s []schemas.Span) []schemas.Span { return proctest.ShuffleWithinSlots(s, int64(cfg.Every), r) }
	proctest.OrderIndependent(t, spans, shuffle, 3, func(s []schemas.Span) []schemas.Verdict {
		return proctest.Drive(t, mustNew(t, cfg), s, t0, t0+40*minute)
	})
}

func TestSnapshotRestore(t *testing.T) {
	spans := generate(3, t0, t0+40*minute, script{quietFrom: t0 + 15*minute, quietTo: t0 + 40*minute})
	end := t0 + 40*minute
	whole := proctest.Drive(t, mustNew(t, testConfig()), spans, t0, end)
	newP := func() processors.Processor { return mustNew(t, testConfig()) }
	for _, cut := range []int64{t0 + 7*minute, t0 + 19*minute + 30*1e9} {
		restored := proctest.Resume(t, newP, proctest.SpanEvents(spans), t0, end, cut, whole)
		// Low streaks survive the snapshot: the quiet period's hints match.
		if count(restored, globex, schemas.StatusWarn, t0, end) == 0 {
			t.Fatal("no scale-in hint after restore")
		}
	}
	// Damage a snapshot taken mid-run, with both keys' slots, samples and
	// streaks in it: an empty processor's snapshot is little more than a
	// header, so its truncations would test only that.
	cut := t0 + 19*minute + 30*1e9
	var before []schemas.Span
	for _, s := range spans {
		if s.EndUnixNano < cut {
			before = append(before, s)
		}
	}
	mid := mustNew(t, testConfig())
	proctest.Drive(t, mid, before, t0, t0+19*minute)
	snap, err := mid.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := mustNew(t, testConfig()).MarshalBinary()
	if mid.Keys() != 2 || len(snap) < 10*len(empty) {
		t.Fatalf("mid-run snapshot: %d keys, %d bytes (empty: %d); want both keys' state in it", mid.Keys(), len(snap), len(empty))
	}
	t.Logf("damaging a %d-byte snapshot of %d keys (empty: %d bytes)", len(snap), mid.Keys(), len(empty))
	proctest.RejectsDamage(t, newP, snap, ErrCorrupt)
	if err := mustNew(t, testConfig()).UnmarshalBinary([]byte{9}); err == nil {
		t.Fatal("unknown snapshot version accepted")
	}
}
