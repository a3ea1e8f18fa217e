package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestSplitCorrectionsSLOsCountEachCorrectionOnce: corrections SLOs split
// by model (what `fusebox calibrate` proposes, so that the busiest model's
// own keys trip while the others degrade to it) count, per key and window,
// exactly the corrections one SLO over every model counts. The demo's
// sessions span models and a fifth of its corrections name only a session;
// the rest name a trace. Before Hooks.ObserveUnmatched, the gpt-4o-mini
// SLO, not seeing a claude span's trace, fell back to the correction's
// session and joined it to a gpt-4o-mini span of that session: its keys'
// rates were ~2.5x the others' on the same traffic (4.9% against 2.9%,
// the generator's 2%). The run is checkpointed and restored half-way (the
// keys outside a split SLO's match are in its snapshot), and the rollups
// (which take the first corrections SLO's attributions) are the same with
// either file.
func TestSplitCorrectionsSLOsCountEachCorrectionOnce(t *testing.T) {
	sc := scenario()
	sc.Incidents = nil
	srcs := sources(t, sc, 16*time.Minute, 2)
	ks := keyed(srcs, func(rem []int) int { return rem[0] })
	cc := corrections.DefaultConfig()
	spec := func(name string, m schemas.Match) engine.SLOSpec {
		meta := processors.Meta{SLO: name, ConfigVersion: "test"}
		return engine.SLOSpec{Meta: meta, Match: m, StateID: name,
			New: func() (processors.Processor, error) { return corrections.New(meta, cc) }}
	}
	whole, split := workerConfig(t), workerConfig(t)
	whole.SLOs = append([]engine.SLOSpec{spec("all", schemas.Match{})}, whole.SLOs...)
	split.SLOs = append([]engine.SLOSpec{
		spec("rest", schemas.Match{Model: []string{"claude-3-5-haiku", "llama-3-70b"}}),
		spec("gpt", schemas.Match{Model: []string{"gpt-4o-mini"}}),
	}, split.SLOs...)

	// counts maps (key, window end) to the corrections of the rate verdict.
	counts := func(out schemas.Output, slos ...string) map[string]float64 {
		m := map[string]float64{}
		for _, v := range out.Verdicts {
			if v.Metric != corrections.MetricRate || v.Status == schemas.StatusInsufficientData {
				continue
			}
			for _, s := range slos {
				if v.SLO == s {
					n, _ := v.Detail("corrections")
					m[fmt.Sprintf("%s@%d", v.Key, v.WindowEndUnixNano)] += n
				}
			}
		}
		return m
	}
	var compared, corrected float64
	for p := int32(0); p < keyedPartitions; p++ {
		a := run(t, whole, p, ks[p], -1, -1)
		half := len(ks[p]) / 2
		b := run(t, split, p, ks[p], half, half+len(ks[p])/8)
		want, got := counts(a, "all"), counts(b, "rest", "gpt")
		if len(want) != len(got) {
			t.Fatalf("partition %d: %d judged (key, window)s split, %d whole", p, len(got), len(want))
		}
		for kw, n := range want {
			if got[kw] != n {
				t.Errorf("partition %d: %s: %v corrections in the split SLOs, %v in the one over every model", p, kw, got[kw], n)
			}
			compared++
			corrected += n
		}
		var ra, rb int64
		for _, r := range a.Rollups {
			ra += r.Corrections
		}
		for _, r := range b.Rollups {
			rb += r.Corrections
		}
		if ra != rb {
			t.Errorf("partition %d: rollups count %d corrections with the split SLOs, %d with one", p, rb, ra)
		}
	}
	if compared < 100 || corrected < 100 {
		t.Fatalf("%v (key, window)s with %v corrections compared: too few to show anything", compared, corrected)
	}
}
