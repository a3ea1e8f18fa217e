package config

import (
	"errors"
	"strings"
	"testing"
)

// TestEffectSection: the effect section's errors name the file, the line
// and the field; written out at its defaults it keeps the config version
// (files written before the section keep their verdict ids), and any
// other value changes it.
func TestEffectSection(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"evaluations", "effect:\n  evaluations: 0\n", "x.yaml:2: effect.evaluations: must be in [1, 1000], got 0"},
		{"too many", "effect:\n  evaluations: 1001\n", "x.yaml:2: effect.evaluations: must be in [1, 1000], got 1001"},
		{"max targets", "effect:\n  max_targets: 0\n", "x.yaml:2: effect.max_targets: must be positive"},
		{"evict after", "effect:\n  evict_after: 0s\n", "x.yaml:2: effect.evict_after: must be a positive duration"},
		{"unknown field", "effect:\n  evaluation: 3\n", "x.yaml:2: effect.evaluation: unknown field (did you mean evaluations?)"},
	} {
		_, err := Parse("x.yaml", []byte(tc.yaml+minimal))
		var e *Error
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &e) {
			t.Errorf("%s: %v, want a *config.Error with %q", tc.name, err, tc.want)
		}
	}
	parse := func(y string) string {
		t.Helper()
		f, err := Parse("x.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return f.Version
	}
	base := parse(minimal)
	if v := parse("effect: {evaluations: 10, max_targets: 100000, evict_after: 24h}\n" + minimal); v != base {
		t.Fatalf("version changed with the default effect section written out: %s -> %s", base, v)
	}
	if v := parse("effect: {evaluations: 4}\n" + minimal); v == base {
		t.Fatal("version did not change with effect.evaluations")
	}
}
