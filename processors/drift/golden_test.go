package drift

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// shiftDown is the scripted incident: from minute 60 the confidence of
// stream i drops (logit mean -0.7: for the first key the median falls from
// 0.82 to 0.69; KS distance of the full shift about 0.45).
func shiftDown(tr traffic, i int) traffic {
	tr.streams = append([]stream(nil), tr.streams...)
	tr.streams[i].shift, tr.streams[i].shiftAt = 0.7, 60*time.Minute
	return tr
}

// setup returns the traffic and configuration of mode for seed; shifted
// adds shiftDown on the watched stream (the first key in reference mode,
// the first canary in canary mode).
func setup(mode Mode, seed uint64, shifted bool) (traffic, Config) {
	tr, cfg, watched := referenceTraffic(seed), DefaultConfig(), 0
	if mode == ModeCanary {
		tr, cfg, watched = canaryTraffic(seed), canaryConfig(), 1
	}
	if shifted {
		tr = shiftDown(tr, watched)
	}
	return tr, cfg
}

// detection returns, for the verdicts of key, the evaluation index (1 =
// the first boundary after start) of the first non-ok verdict and of the
// first breach (-1 if none), and fails on any warn or breach before start.
func detection(t *testing.T, vs []schemas.Verdict, key schemas.Key, start, every int64) (firstAlert, firstBreach int64) {
	t.Helper()
	firstAlert, firstBreach = -1, -1
	for _, v := range vs {
		if v.Key != key {
			continue
		}
		end := v.WindowEndUnixNano
		alert := v.Status == schemas.StatusWarn || v.Status == schemas.StatusBreach
		if end <= start {
			if alert {
				t.Errorf("%s on %s before the incident, at %d min", v.Status, key.String(), (end-t0)/int64(time.Minute))
			}
			continue
		}
		idx := (end - start + every - 1) / every
		if firstAlert < 0 && alert {
			firstAlert = idx
		}
		if firstBreach < 0 && v.Status == schemas.StatusBreach {
			firstBreach = idx
		}
	}
	return firstAlert, firstBreach
}

// noAlerts fails on any warn or breach of keys other than except.
func noAlerts(t *testing.T, vs []schemas.Verdict, except schemas.Key) {
	t.Helper()
	for _, v := range vs {
		if v.Key != except && (v.Status == schemas.StatusWarn || v.Status == schemas.StatusBreach) {
			t.Errorf("healthy key %s: %s at %d min", v.Key.String(), v.Status, (v.WindowEndUnixNano-t0)/int64(time.Minute))
		}
	}
}

// The first non-ok verdict must come within 2 evaluations of the start;
// with the k-consecutive rule (k = 3) the breach comes k-1 evaluations
// after the first significant one, so within k+1.
func checkDetection(t *testing.T, vs []schemas.Verdict, key schemas.Key, start, every int64, k int) {
	t.Helper()
	alert, breach := detection(t, vs, key, start, every)
	if alert < 1 || alert > 2 {
		t.Errorf("%s: first warn/breach at evaluation %d after the shift, want within 2", key.String(), alert)
	}
	if breach < 1 || breach > int64(k)+1 || breach != alert+int64(k)-1 {
		t.Errorf("%s: first breach at evaluation %d (first alert %d), want %d consecutive evaluations later, within %d", key.String(), breach, alert, k-1, k+1)
	}
}

// goldenShift replays tr, whose stream i shifts, through a processor of
// cfg, compares the verdicts with the golden file, and checks that the
// shift is detected in time and nothing else alerts.
func goldenShift(t *testing.T, tr traffic, i int, cfg Config, file string) []schemas.Verdict {
	t.Helper()
	vs := proctest.ReplayAll(t, newDrift(t, cfg), tr.spans())
	proctest.Golden(t, file, proctest.KVLines(vs, t0, false))
	key := tr.streams[i].key
	checkDetection(t, onlyMetric(vs, MetricName(cfg)), key, t0+int64(tr.streams[i].shiftAt), int64(cfg.Every), cfg.EffectiveConsecutive())
	noAlerts(t, vs, key)
	return vs
}

// onlyMetric is the verdicts of metric.
func onlyMetric(vs []schemas.Verdict, metric string) []schemas.Verdict {
	var out []schemas.Verdict
	for _, v := range vs {
		if v.Metric == metric {
			out = append(out, v)
		}
	}
	return out
}

func TestGoldenCanaryShiftDetected(t *testing.T) {
	tr := shiftDown(canaryTraffic(1), 1) // acme/chat/m-large/canary
	cfg := canaryConfig()
	key := tr.streams[1].key
	for _, v := range goldenShift(t, tr, 1, cfg, "drift_canary_shift.txt") {
		if v.Key.Variant != "canary" {
			t.Fatalf("verdict for %s: canary mode judges canary keys only", v.Key.String())
		}
		if v.Key == key && v.Status == schemas.StatusBreach {
			// Mann–Whitney agrees and the shift is downward.
			mp, _ := v.Detail(DetailMWP)
			hl, _ := v.Detail(DetailHLShift)
			if mp >= cfg.KSAlpha() || hl >= 0 {
				t.Errorf("breach at %d min with mw_p %v hl_shift %v", (v.WindowEndUnixNano-t0)/int64(time.Minute), mp, hl)
			}
		}
	}
}

func TestGoldenReferenceShiftDetected(t *testing.T) {
	goldenShift(t, shiftDown(referenceTraffic(1), 0), 0, DefaultConfig(), "drift_reference_shift.txt") // acme/chat/m-large
}

func TestNoIncidentNoBreach(t *testing.T) {
	for _, mode := range []Mode{ModeReference, ModeCanary} {
		for _, seed := range []uint64{1, 2, 3} {
			tr, cfg := setup(mode, seed, false)
			// A low-volume key too: 0.5 spans/s, 150 values per window.
			low := tr.streams[0]
			low.key.Tenant, low.rate = "initech", 0.5
			tr.streams = append(tr.streams, low)
			if mode == ModeCanary {
				lowBase := tr.streams[0]
				lowBase.key.Tenant, lowBase.rate = "initech", 2
				tr.streams = append(tr.streams, lowBase)
			}
			vs := proctest.ReplayAll(t, newDrift(t, cfg), tr.spans())
			warns, tested := 0, 0
			maxD := 0.0
			for _, v := range vs {
				switch v.Status {
				case schemas.StatusBreach:
					t.Errorf("%s seed %d: false breach on %s at %d min: d %v", mode, seed, v.Key.String(), (v.WindowEndUnixNano-t0)/int64(time.Minute), v.Value)
				case schemas.StatusWarn:
					warns++
				}
				if v.Status != schemas.StatusInsufficientData {
					tested++
					maxD = max(maxD, v.Value)
				}
			}
			if tested < 100 {
				t.Errorf("%s seed %d: only %d tested verdicts", mode, seed, tested)
			}
			t.Logf("%s seed %d: %d verdicts, %d tested, %d warns, largest d %.3f (min_effect %.2f)", mode, seed, len(vs), tested, warns, maxD, cfg.EffectiveMinEffect())
		}
	}
}

func TestDeterministicAndOrderIndependent(t *testing.T) {
	for _, mode := range []Mode{ModeReference, ModeCanary} {
		tr, cfg := setup(mode, 5, true)
		tr.duration = 75 * time.Minute
		cfg.MaxSamplesPerSlot = 100 // caps bite: 300 or 480 spans per minute
		spans := tr.spans()
		r := rand.New(rand.NewPCG(42, 1))
		// Arrival order within the processor's interval (Step: the
		// sequential detectors judge each step once).
		every := int64(newDrift(t, cfg).Interval())
		shuffle := func(s []schemas.Span) []schemas.Span { return proctest.ShuffleWithinSlots(s, every, r) }
		a := proctest.OrderIndependent(t, spans, shuffle, 1, func(s []schemas.Span) []schemas.Verdict {
			return proctest.ReplayAll(t, newDrift(t, cfg), s)
		})
		breached := false
		for _, v := range a {
			breached = breached || v.Status == schemas.StatusBreach
		}
		if !breached {
			t.Fatalf("%s: the shift was not detected with capped windows", mode)
		}
	}
}

func TestSnapshotRoundTripContinuesIdentically(t *testing.T) {
	for _, mode := range []Mode{ModeReference, ModeCanary} {
		tr, cfg := setup(mode, 9, true)
		tr.duration = 70 * time.Minute
		spans := tr.spans()
		newP := func() processors.Processor { return newDrift(t, cfg) }
		from, to := proctest.Bounds(spans, int64(cfg.Every))
		whole := proctest.Drive(t, newP(), spans, from, to)
		// Cut before any state is full, in the steady state, and in the
		// middle of a run of consecutive significant evaluations; and
		// between two KS evaluations, at the sequential detectors' steps
		// (their statistics are in the snapshot).
		for _, cut := range []time.Duration{2 * time.Minute, 40 * time.Minute, 62 * time.Minute,
			40*time.Minute + 15*time.Second, 61*time.Minute + 30*time.Second, 62*time.Minute + 45*time.Second} {
			if mode == ModeCanary && cut%time.Minute != 0 {
				continue // canary mode is evaluated every minute only
			}
			proctest.Resume(t, newP, proctest.SpanEvents(spans), from, to, t0+int64(cut), whole)
		}
	}
}

func TestSnapshotRejectsDamage(t *testing.T) {
	tr := referenceTraffic(2)
	tr.duration = 10 * time.Minute
	p := newDrift(t, DefaultConfig())
	var col proctest.Collector
	proctest.Replay(p, tr.spans(), 0, 0, t0+int64(9*time.Minute), &col)
	snap, _ := p.MarshalBinary()
	proctest.RejectsDamage(t, func() processors.Processor { return newDrift(t, DefaultConfig()) }, snap, ErrSnapshot)
	other := DefaultConfig()
	other.Step = 30 * time.Second
	if err := newDrift(t, other).UnmarshalBinary(snap); !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), "every") {
		t.Fatalf("snapshot restored into another slot width: %v", err)
	}
	tail := snapcodec.NewEncoder(nil) // an empty tail processor's snapshot
	tail.Header("fusebox.tail", 2)
	tail.Count(0)
	if err := newDrift(t, DefaultConfig()).UnmarshalBinary(tail.Bytes()); err == nil {
		t.Fatal("another processor's snapshot accepted")
	}
}

// The exact p-value is used while both sides have at most 10000 values,
// D >= MinEffect and the asymptotic p-value is below 100 × alpha (where
// p can decide); the asymptotic one otherwise.
func TestMethodIsReported(t *testing.T) {
	tr := shiftDown(canaryTraffic(3), 1) // a shift: some evaluations are significant
	tr.duration = 70 * time.Minute
	cfg := canaryConfig()
	alpha := cfg.KSAlpha()
	var exact, asymp int
	for _, v := range proctest.ReplayAll(t, newDrift(t, cfg), tr.spans()) {
		if v.Status == schemas.StatusInsufficientData {
			continue
		}
		p, _ := v.Detail(DetailPValue)
		switch v.Method {
		case stats.MethodKSAsymp:
			asymp++
			if p < 100*alpha {
				t.Fatalf("asymptotic p-value %v below 100 × alpha with %d values: the exact one decides there", p, v.N)
			}
		case stats.MethodKSExact:
			exact++
			if p >= 1000*alpha {
				t.Fatalf("exact p-value %v far above alpha with %d values: the asymptotic one was below 100 × alpha", p, v.N)
			}
		default:
			t.Fatalf("method %q", v.Method)
		}
	}
	if exact == 0 || asymp == 0 {
		t.Fatalf("%d exact and %d asymptotic verdicts: the traffic does not exercise both", exact, asymp)
	}
	rtr := referenceTraffic(3)
	rtr.duration = 70 * time.Minute
	vs := onlyMetric(proctest.ReplayAll(t, newDrift(t, DefaultConfig()), rtr.spans()), "ks_confidence")
	last := vs[len(vs)-1]
	if nr, _ := last.Detail(DetailNReference); nr <= 10000 || last.Method != stats.MethodKSAsymp {
		t.Fatalf("n_reference %v method %q; want ks_asymp above 10000 values", nr, last.Method)
	}
}
