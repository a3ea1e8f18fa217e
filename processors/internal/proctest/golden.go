package proctest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// The -update flag (go test ./processors/tail -update) rewrites the golden
// files instead of comparing with them. It is registered here unless a
// package linked into the same test binary registered it first; Update
// reads it through the flag set, so either registration serves.
var _ = func() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata/golden")
	}
	return true
}()

// Update reports whether -update was given.
func Update() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Golden compares got with the file testdata/golden/name of the package
// under test, failing at the first differing line; with -update it
// (re)writes the file instead.
func Golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) == got {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := range min(len(wl), len(gl)) {
		if wl[i] != gl[i] {
			t.Fatalf("%s differs at line %d:\nwant %s\ngot  %s\n(run go test -update if the change is intended)", path, i+1, wl[i], gl[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d (run go test -update if the change is intended)", path, len(gl), len(wl))
}

// Line renders a verdict on one line for golden files and failure
// messages: minutes since t0, the key's dimensions, numbers to 6
// significant digits so that the files read well.
//
//	+061m globex/search-api/gpt-small/baseline correction_rate breach v=0.4 th=0.05 ci0.95=[0.31,0.49] n=60 wilson corrections=24 ...
func Line(v *schemas.Verdict, t0 int64) string {
	var b strings.Builder
	k := v.Key
	fmt.Fprintf(&b, "+%03dm %s/%s/%s/%s %s %s v=%.6g th=%.6g", (v.WindowEndUnixNano-t0)/Minute, k.Tenant, k.Service, k.Model, k.Variant, v.Metric, v.Status, v.Value, v.Threshold)
	if v.IntervalLevel != 0 {
		fmt.Fprintf(&b, " ci%.2g=[%.6g,%.6g]", v.IntervalLevel, v.Lower, v.Upper)
	}
	fmt.Fprintf(&b, " n=%d %s", v.N, v.Method)
	for _, d := range v.Details {
		fmt.Fprintf(&b, " %s=%.6g", d.Name, d.Value)
	}
	return b.String()
}

// Lines renders verdicts with Line, one a line.
func Lines(vs []schemas.Verdict, t0 int64) string {
	var b strings.Builder
	for i := range vs {
		b.WriteString(Line(&vs[i], t0))
		b.WriteByte('\n')
	}
	return b.String()
}

// KVLines renders verdicts one a line as key=value pairs, minutes since
// t0, numbers to 4 significant digits so that the files do not depend on
// the last bits of floating point (FMA contraction differs between
// architectures). interval adds the confidence interval and its level.
//
//	t=61m key=acme/chat/m-large/ metric=p999_duration_ms status=breach value=4.1e+04 threshold=6000 interval=[...]@0.95 method=gpd_mle_profile n=6000 xi=0.8 ...
func KVLines(vs []schemas.Verdict, t0 int64, interval bool) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "t=%dm key=%s metric=%s status=%s value=%.4g threshold=%.4g",
			(v.WindowEndUnixNano-t0)/Minute, v.Key.String(), v.Metric, v.Status, v.Value, v.Threshold)
		if interval {
			fmt.Fprintf(&b, " interval=[%.4g,%.4g]@%.4g", v.Lower, v.Upper, v.IntervalLevel)
		}
		fmt.Fprintf(&b, " method=%s n=%d", v.Method, v.N)
		for _, d := range v.Details {
			fmt.Fprintf(&b, " %s=%.4g", d.Name, d.Value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
