package tail

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestProbeJudgesTrafficSinceHalfOpen: a key whose window still holds an
// incident (slow spans in the first 6 minutes of a 10-minute window) is,
// when probed since minute 6, judged on the fast spans since then only:
// ok once min_samples of them arrived, insufficient_data before; the
// unprobed key with the same spans still breaches on its full window.
func TestProbeJudgesTrafficSinceHalfOpen(t *testing.T) {
	probed := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "probe"}
	full := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "full"}
	c := testConfig()
	c.Budget = 1000
	const perMin = 60
	gap := int64(time.Minute) / perMin
	since := t0 + int64(6*time.Minute)
	slow := func(int) float64 { return 5000 }
	fast := func(i int) float64 { return 100 + float64(i%50) }
	run := func(probe bool, fastMinutes int) map[schemas.Key]schemas.Verdict {
		p := newTail(t, c)
		for _, k := range []schemas.Key{probed, full} {
			proctest.ObserveAll(p, spansAt(k, t0, gap, 6*perMin, slow))
			fs := spansAt(k, since, gap, fastMinutes*perMin, fast)
			for i := range fs {
				fs[i].TraceID[3] = 9 // distinct from the slow spans
			}
			proctest.ObserveAll(p, fs)
		}
		if probe {
			p.SetProbes(processors.Probes{probed: since})
		}
		var col proctest.Collector
		p.Evaluate(since+int64(fastMinutes)*int64(time.Minute), &col)
		proctest.ValidateAll(t, col.Verdicts)
		out := map[schemas.Key]schemas.Verdict{}
		for _, v := range col.Verdicts {
			out[v.Key] = v
		}
		return out
	}
	// 4 minutes since the half-open: 240 fast spans >= min_samples (200).
	got := run(true, 4)
	if v := got[probed]; v.Status != schemas.StatusOK || v.WindowStartUnixNano != since || v.N != 4*perMin {
		t.Fatalf("probed key: %s window start %d n %d, want ok on [%d, now) with %d spans", v.Status, v.WindowStartUnixNano, v.N, since, 4*perMin)
	}
	if v := got[full]; v.Status != schemas.StatusBreach {
		t.Fatalf("unprobed key: %s, want breach (its window holds the incident)", v.Status)
	}
	// 2 minutes since: 120 spans < min_samples: insufficient, not ok.
	if v := run(true, 2)[probed]; v.Status != schemas.StatusInsufficientData {
		t.Fatalf("probed key with 120 spans: %s, want insufficient_data", v.Status)
	}
	// Without probes the same key breaches: the probe is what changed it.
	if v := run(false, 4)[probed]; v.Status != schemas.StatusBreach {
		t.Fatalf("no probe: %s, want breach", v.Status)
	}
}
