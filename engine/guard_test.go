package engine_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
)

// With a limit of one model per partition worker, the first model seen
// keeps its own keys and every other folds into engine.Overflow: verdicts
// come for exactly those two model values, the folded records are counted
// under the model dimension, and a restart from a snapshot keeps the same
// admitted set (so the same verdicts).
func TestCardinalityGuardFoldsIntoOverflow(t *testing.T) {
	srcs := sources(t, scenario(), 12*time.Minute, 3) // 3 models per tenant
	cfg := workerConfig(t)
	cfg.Guard = engine.GuardConfig{MaxModels: 1}
	recs := keyed(srcs, func(rem []int) int { return rem[0] })
	checked := 0
	for p := int32(0); p < keyedPartitions; p++ {
		if len(recs[p]) == 0 {
			continue
		}
		w, err := engine.NewWorker(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs[p] {
			w.Apply(&recs[p][i])
		}
		if w.Stats().Spans == 0 {
			continue // no tenant hashes to this partition
		}
		out := w.TakeOutput()
		models := map[string]int{}
		for _, v := range out.Verdicts {
			models[v.Key.Model]++
		}
		if len(models) != 2 || models[engine.Overflow] == 0 {
			t.Fatalf("partition %d: verdicts for models %v, want one real model and %q", p, models, engine.Overflow)
		}
		st := w.Stats()
		if st.Overflowed[2] == 0 || st.Overflowed[0] != 0 || st.Overflowed[1] != 0 || st.Overflowed[3] != 0 {
			t.Fatalf("partition %d: overflow counts %v, want only the model dimension's", p, st.Overflowed)
		}
		half := len(recs[p]) / 2
		if got, want := run(t, cfg, p, recs[p], half, half+len(recs[p])/4), run(t, cfg, p, recs[p], -1, -1); !reflect.DeepEqual(got.Verdicts, want.Verdicts) {
			t.Fatalf("partition %d: a restart from a snapshot changed the guarded verdicts (%d vs %d)", p, len(got.Verdicts), len(want.Verdicts))
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no keyed partition had spans")
	}
}
