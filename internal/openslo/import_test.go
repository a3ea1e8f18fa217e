package openslo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"go.yaml.in/yaml/v3"
)

func importFiles(t *testing.T, names ...string) *Result {
	t.Helper()
	var in []Input
	for _, n := range names {
		b, err := os.ReadFile("testdata/openslo/" + n)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, Input{Name: n, Data: b})
	}
	res, err := Importer{}.Import(in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func fields(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d:%s", p.Document, p.Field))
	}
	sort.Strings(out)
	return out
}

// TestImportSpecExamples: OpenSLO files written as the specification's
// examples (and Sloth's v1alpha form) import to the SLOs they say, each
// refused field named with its document and path, every descriptive field
// left out with a note.
func TestImportSpecExamples(t *testing.T) {
	for _, c := range []struct {
		file    string
		refused []string // document:field
		check   func(t *testing.T, f *config.File)
	}{
		{file: "refs.yaml", check: func(t *testing.T, f *config.File) {
			c := f.SLOs[0].Sections[0].Config.(*burnrate.Config)
			want := burnrate.DefaultConfig()
			want.Target = 0.995
			want.Page = []burnrate.Rule{{Long: time.Hour, Short: 5 * time.Minute, Factor: 14.4}} // short: 1/12 of the long window
			want.Ticket = []burnrate.Rule{{Long: 24 * time.Hour, Short: 2 * time.Hour, Factor: 3}}
			if f.SLOs[0].Name != "chat-availability" || !slices.Equal(f.SLOs[0].Match.Service, []string{"chat"}) || fmt.Sprint(*c) != fmt.Sprint(want) {
				t.Errorf("got %s %v %+v, want chat-availability [chat] %+v", f.SLOs[0].Name, f.SLOs[0].Match.Service, *c, want)
			}
		}},
		{file: "latency.yaml", check: func(t *testing.T, f *config.File) {
			c := f.SLOs[0].Sections[0].Config.(*tail.Config)
			want := tail.DefaultConfig()
			want.Metric, want.Budget, want.P, want.Window = "ttft_ms", 1500, 0.99, 15*time.Minute
			if *c != want {
				t.Errorf("got %+v, want %+v", *c, want)
			}
		}},
		{file: "fusebox-v1alpha.yaml", check: func(t *testing.T, f *config.File) {
			c := f.SLOs[0].Sections[0].Config.(*burnrate.Config)
			if c.Target != 0.99 || f.SLOs[0].Match.Service[0] != "search" {
				t.Errorf("got %+v", *c)
			}
		}},
		{file: "datadog.yaml", refused: []string{"1:spec.indicator.spec.ratioMetric.good.metricSource", "1:spec.indicator.spec.ratioMetric.total.metricSource"},
			check: func(t *testing.T, f *config.File) {
				if c := f.SLOs[0].Sections[0].Config.(*burnrate.Config); c.Target != 0.98 {
					t.Errorf("target %v, want 0.98", c.Target)
				}
			}},
		{file: "sloth-v1alpha.yaml", refused: []string{"1:spec.objectives[0].ratioMetrics.good", "1:spec.objectives[0].ratioMetrics.total"},
			check: func(t *testing.T, f *config.File) {
				if c := f.SLOs[0].Sections[0].Config.(*burnrate.Config); c.Target != 0.999 || f.SLOs[0].Name != "my-service-availability" {
					t.Errorf("got %s %+v", f.SLOs[0].Name, *c)
				}
			}},
	} {
		t.Run(c.file, func(t *testing.T) {
			res := importFiles(t, c.file)
			if got := fields(res.Problems.Refused()); !slices.Equal(got, c.refused) {
				t.Errorf("refused %v, want %v:\n%s", got, c.refused, res.Problems.Error())
			}
			for _, p := range res.Problems {
				if p.File != c.file || p.Document < 1 || p.Field == "" || p.Reason == "" {
					t.Errorf("a problem without its place: %+v", *p)
				}
			}
			f, err := config.Parse("imported", res.File)
			if err != nil {
				t.Fatalf("%v\n%s", err, res.File)
			}
			if len(f.SLOs) != 1 || res.SLOs != 1 {
				t.Fatalf("%d SLOs, want 1", len(f.SLOs))
			}
			c.check(t, f)
		})
	}
	// refs.yaml notes every descriptive field it leaves out.
	res := importFiles(t, "refs.yaml")
	want := []string{"1:kind", "1:metadata.displayName", "2:kind", "3:metadata.displayName", "4:metadata.displayName", "4:metadata.labels",
		"4:spec.objectives[0].displayName", "5:spec.description", "5:spec.notificationTargets[0].targetRef", "6:spec.notificationTargets[0].targetRef",
		"7:spec.description", "8:kind"}
	if got := fields(res.Problems); !slices.Equal(got, want) {
		t.Errorf("notes %v, want %v", got, want)
	}
}

// mappedFields extracts, per SLO name, the OpenSLO fields that import maps
// (v1 or v1alpha, references resolved): service, target, op, value, the
// window, the SLI's kind and fusebox source, and the burn-rate
// conditions (severity, op, threshold, lookbackWindow).
func mappedFields(t *testing.T, data []byte) map[string]map[string]string {
	t.Helper()
	var docs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	m := func(v any) map[string]any { x, _ := v.(map[string]any); return x }
	l := func(v any) []any { x, _ := v.([]any); return x }
	byName := func(kind, name any) map[string]any {
		for _, d := range docs {
			if d["kind"] == kind && m(d["metadata"])["name"] == name {
				return d
			}
		}
		t.Fatalf("no %v %v", kind, name)
		return nil
	}
	out := map[string]map[string]string{}
	for _, d := range docs {
		if d["kind"] != "SLO" {
			continue
		}
		f := map[string]string{}
		spec := m(d["spec"])
		f["service"] = fmt.Sprint(spec["service"])
		obj := m(l(spec["objectives"])[0])
		target, _ := obj["target"].(float64)
		if tp, ok := obj["targetPercent"].(float64); ok {
			target = tp / 100
		}
		f["target"] = fmt.Sprint(target)
		f["op"], f["value"] = fmt.Sprint(obj["op"]), fmt.Sprint(obj["value"])
		if tw := l(spec["timeWindow"]); len(tw) > 0 {
			w, err := parseShorthand(fmt.Sprint(m(tw[0])["duration"]))
			if err != nil {
				t.Fatal(err)
			}
			f["window"] = w.String()
		}
		if tw := l(spec["timeWindows"]); len(tw) > 0 {
			u := map[any]string{"Day": "d", "Hour": "h", "Minute": "m", "Week": "w"}[m(tw[0])["unit"]]
			w, err := parseShorthand(fmt.Sprint(m(tw[0])["count"]) + u)
			if err != nil {
				t.Fatal(err)
			}
			f["window"] = w.String()
		}
		sources := func(sli map[string]any) {
			if th := m(sli["thresholdMetric"]); th != nil {
				f["sli"] = "threshold"
				for k, v := range m(m(th["metricSource"])["spec"]) {
					f["threshold."+k] = fmt.Sprint(v)
				}
			}
			if ra := m(sli["ratioMetric"]); ra != nil {
				f["sli"] = "ratio"
				for _, part := range []string{"good", "bad", "total"} {
					for k, v := range m(m(m(ra[part])["metricSource"])["spec"]) {
						f[part+"."+k] = fmt.Sprint(v)
					}
				}
			}
		}
		switch {
		case spec["indicator"] != nil:
			sources(m(m(spec["indicator"])["spec"]))
		case spec["indicatorRef"] != nil:
			sources(m(byName("SLI", spec["indicatorRef"])["spec"]))
		}
		if rm := m(obj["ratioMetrics"]); rm != nil { // v1alpha
			f["sli"] = "ratio"
			for _, part := range []string{"good", "bad", "total"} {
				if p := m(rm[part]); p != nil {
					f[part+".count"] = fmt.Sprint(p["query"])
				}
			}
		}
		var conds []string
		for _, p := range l(spec["alertPolicies"]) {
			pol := m(p)
			if ref, ok := pol["alertPolicyRef"]; ok {
				pol = byName("AlertPolicy", ref)
			}
			c := m(l(m(pol["spec"])["conditions"])[0])
			if ref, ok := c["conditionRef"]; ok {
				c = byName("AlertCondition", ref)
			}
			cs := m(c["spec"])
			cond := m(cs["condition"])
			conds = append(conds, fmt.Sprintf("%v %v %v %v", cs["severity"], cond["op"], cond["threshold"], cond["lookbackWindow"]))
		}
		sort.Strings(conds)
		f["conditions"] = strings.Join(conds, "; ")
		out[fmt.Sprint(m(d["metadata"])["name"])] = f
	}
	return out
}

// TestRoundTripOpenSLOFuseboxOpenSLO: an OpenSLO file imported and
// exported again keeps every field import maps.
func TestRoundTripOpenSLOFuseboxOpenSLO(t *testing.T) {
	for _, name := range []string{"refs.yaml", "latency.yaml", "fusebox-v1alpha.yaml"} {
		orig, err := os.ReadFile("testdata/openslo/" + name)
		if err != nil {
			t.Fatal(err)
		}
		res := importFiles(t, name)
		if r := res.Problems.Refused(); len(r) > 0 {
			t.Fatalf("%s: %s", name, r.Error())
		}
		f, err := config.Parse("imported", res.File)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Export(f)
		if err != nil {
			t.Fatal(err)
		}
		want, got := mappedFields(t, orig), mappedFields(t, out)
		if len(want) == 0 {
			t.Fatalf("%s: no SLO", name)
		}
		for slo, fs := range want {
			for k, v := range fs {
				if k == "conditions" && v == "" {
					continue // none given: fusebox runs (and writes) the SRE workbook's four rules
				}
				if got[slo][k] != v {
					t.Errorf("%s: slo %s: %s is %q after the round trip, was %q", name, slo, k, got[slo][k], v)
				}
			}
		}
	}
}
