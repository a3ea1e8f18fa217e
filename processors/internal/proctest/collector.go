// Package proctest holds what the processors' tests share: an Emitter that
// collects, drivers that feed records to a processor as the engine does,
// golden files with an -update flag, verdict rendering and validation, span
// generators, and the snapshot checks every processor runs. It is imported
// by _test files only.
package proctest

import (
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Collector is a processors.Emitter that keeps what it is given, in order.
type Collector struct {
	Verdicts []schemas.Verdict
	Rollups  []schemas.Rollup
}

// Verdict appends v.
func (c *Collector) Verdict(v schemas.Verdict) { c.Verdicts = append(c.Verdicts, v) }

// Rollup appends r.
func (c *Collector) Rollup(r schemas.Rollup) { c.Rollups = append(c.Rollups, r) }

// Reset empties the collector, keeping its buffers.
func (c *Collector) Reset() {
	c.Verdicts = c.Verdicts[:0]
	c.Rollups = c.Rollups[:0]
}

// ValidateAll fails t at the first verdict that does not pass
// schemas.Verdict.Validate.
func ValidateAll(t testing.TB, vs []schemas.Verdict) {
	t.Helper()
	for i := range vs {
		v := &vs[i]
		if err := v.Validate(); err != nil {
			t.Fatalf("verdict %d (%s %s, window end %d) invalid: %v", i, v.Key.String(), v.Metric, v.WindowEndUnixNano, err)
		}
	}
}

// Minutes returns, for each verdict that keep accepts, its window end in
// minutes since t0, in order.
func Minutes(vs []schemas.Verdict, t0 int64, keep func(*schemas.Verdict) bool) []int64 {
	var at []int64
	for i := range vs {
		if keep(&vs[i]) {
			at = append(at, (vs[i].WindowEndUnixNano-t0)/Minute)
		}
	}
	return at
}
