package chartcheck

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestMemoryLimitAsPlainBytes: a memory limit written as a number of
// bytes in a values file (YAML reads it as a float64) sets GOMEMLIMIT like
// the same limit with a suffix: 0.9 × 2147483648 B = 1843.2 MiB → 1843MiB,
// as for 2Gi (it used to fail the render as "2.147483648e+09").
func TestMemoryLimitAsPlainBytes(t *testing.T) {
	for _, mem := range []string{"2147483648", `"2147483648"`, "2Gi", "2147483648.0"} {
		vals := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(vals, []byte("resources:\n  limits:\n    memory: "+mem+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, objs := rendered(t, Release{Values: []string{vals}})
		sts := only[*appsv1.StatefulSet](t, objs, "StatefulSet")
		got := ""
		for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "GOMEMLIMIT" {
				got = e.Value
			}
		}
		if got != "1843MiB" {
			t.Errorf("memory %s: GOMEMLIMIT %q, want 1843MiB", mem, got)
		}
	}
}
