package config

import (
	"strings"
	"testing"
)

// TestScalingMaxSamplesPerSlotDeprecated: scaling's max_samples_per_slot
// is ignored but still loads, with any value (an older file's 1 was an
// error before and is not now), written at its old default 2000 it keeps
// the SLO's state id of a file without it (so a checkpoint's scaling state
// is restored across the upgrade), and an error next to it still names
// its field and line.
func TestScalingMaxSamplesPerSlotDeprecated(t *testing.T) {
	const base = "slos:\n  - name: a\n    scaling: {stddev_budget_ms: 100%s}\n"
	parse := func(extra string) *File {
		t.Helper()
		f, err := Parse("x.yaml", []byte(strings.Replace(base, "%s", extra, 1)))
		if err != nil {
			t.Fatalf("%q: %v", extra, err)
		}
		return f
	}
	without := parse("")
	if with := parse(", max_samples_per_slot: 2000"); StateID(with, with.SLOs[0]) != StateID(without, without.SLOs[0]) {
		t.Error("max_samples_per_slot: 2000 changed the state id")
	}
	parse(", max_samples_per_slot: 1")
	_, err := Parse("x.yaml", []byte("slos:\n  - name: a\n    scaling:\n      stddev_budget_ms: 100\n      max_samples_per_slot: 2000\n      max_categoriez: 5\n"))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:6: slos[0].scaling.max_categoriez: unknown field") {
		t.Fatalf("error %v, want the typo named with its line", err)
	}
}
