package engine_test

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestWatermarkJumpEvaluatesOnlyWindowsWithData moves the watermark a year
// ahead after one minute of data (a long idle gap, a backfill): the worker
// must evaluate the windows that hold the data, then jump over the empty
// ones (525,600 one-minute boundaries) instead of evaluating each, and
// still judge the data that comes after the gap.
func TestWatermarkJumpEvaluatesOnlyWindowsWithData(t *testing.T) {
	cfg := workerConfig(t)
	w, err := engine.NewWorker(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := int64(1_700_000_000e9)
	off := int64(0)
	mk := func(end int64, tenant string) *engine.KeyedRecord {
		off++
		return &engine.KeyedRecord{Offset: off, Source: engine.SourceRef{Topic: "s", Partition: 0, Offset: off},
			SourceTopics: "s:1", SourceMaxEventTime: end,
			Spans: []schemas.Span{{Key: schemas.Key{Tenant: tenant, Model: "m"}, StartUnixNano: end - 1e6, EndUnixNano: end, DurationMs: 1}}}
	}
	for i := int64(0); i < 60; i++ {
		w.Apply(mk(base+i*int64(time.Second), "a"))
	}
	year := int64(365 * 24 * time.Hour)
	start := time.Now()
	w.Apply(mk(base+year, "b"))
	w.Apply(mk(base+year+int64(10*time.Minute), "b"))
	took := time.Since(start)
	st := w.Stats()
	// Burn-rate windows reach 3 days: at most that many minutes are
	// stepped through (4,320), plus the rollups' few.
	if st.Evaluations > 20_000 {
		t.Errorf("%d evaluations for a one-year jump: empty windows were evaluated one by one", st.Evaluations)
	}
	if st.SkippedEvaluations < 500_000 {
		t.Errorf("skipped %d evaluations, want the year's empty boundaries skipped", st.SkippedEvaluations)
	}
	if took > 5*time.Second {
		t.Errorf("the jump took %v", took)
	}
	var judgedB bool
	for _, v := range w.TakeOutput().Verdicts {
		if v.Key.Tenant == "b" && v.WindowEndUnixNano > base+year {
			judgedB = true
		}
	}
	if !judgedB {
		t.Errorf("no verdict for the data after the gap")
	}
	t.Logf("one-year jump: %d evaluations, %d skipped, %v", st.Evaluations, st.SkippedEvaluations, took)
}
