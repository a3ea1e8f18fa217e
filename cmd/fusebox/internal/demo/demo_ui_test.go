package demo

import (
	"context"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/internal/ui/uitest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestDemoLivePageInChromium runs the demo (embedded broker, generator,
// pipeline) for the first incidents of the built-in scenario with its HTTP
// server on a free port, and once the pipeline has stopped (the JSONL file
// complete, the page still served) loads the live page in headless
// Chromium, for the key of the latency-tail incident and for the canary of
// the drift incident. The charts must hold the run's data, compared with
// the verdicts and commands of the JSONL file: one dot per evaluation of
// each series, the budget line at the verdicts' threshold, the QQ plot of
// the latest GPD fit with its exceedances and xi, the ECDFs with the KS
// distance of the latest drift verdict, one fuse row per target with its
// commands. Screenshots go to $FUSEBOX_ARTIFACTS.
func TestDemoLivePageInChromium(t *testing.T) {
	c := testharness.StartChromium(t)
	artifacts := testharness.ArtifactsDir(t)
	dir := t.TempDir()
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The first 24 minutes of the scenario, played to their end: the
	// latency tail (8-13 min) trips and closes, the canary drift
	// (13-19 min) trips.
	sc := Scenario()
	sc.Duration = 24 * time.Minute
	sc.Incidents = sc.Incidents[:2]
	var checked bool
	// Duration bounds the wall time on a slow machine: the page must hold
	// whatever the run wrote, finished or not (checkPage needs both
	// incidents' breaches, at minutes 13 and 17 of event time).
	res, err := Run(ctx, Options{Headless: true, Speedup: testSpeedup(t), Scenario: &sc, Duration: 2 * time.Minute, JSONL: filepath.Join(dir, "demo.jsonl"),
		Start: start, Stdout: io.Discard, Stderr: testWriter{t}, HTTP: "127.0.0.1:0",
		BeforeExit: func(addr string) {
			if addr == "" {
				t.Error("BeforeExit: no HTTP server")
				return
			}
			vs, cmds := readJSONL(t, filepath.Join(dir, "demo.jsonl"))
			checkPage(t, c, "http://"+addr, artifacts, vs, cmds)
			checked = true
		}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !checked {
		t.Fatal("BeforeExit was not called")
	}
	t.Logf("demo: %d verdicts, %d commands in %v (scenario finished: %v)", res.Verdicts, res.Commands, res.Wall, res.Finished)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func keyQuery(k schemas.Key) string {
	q := url.Values{}
	q.Set("tenant", k.Tenant)
	q.Set("service", k.Service)
	q.Set("model", k.Model)
	q.Set("variant", k.Variant)
	return q.Encode()
}

type seriesOf struct {
	processor, slo, metric string
}

// byKey groups the verdicts of key k by series, each in window order with
// replays collapsed (the page keeps one point per window end).
func byKey(vs []schemas.Verdict, k schemas.Key) map[seriesOf][]schemas.Verdict {
	out := map[seriesOf][]schemas.Verdict{}
	for _, v := range vs {
		if v.Key != k {
			continue
		}
		s := seriesOf{v.Processor, v.SLO, v.Metric}
		out[s] = append(out[s], v)
	}
	for s, l := range out {
		slices.SortStableFunc(l, func(a, b schemas.Verdict) int { return int(a.WindowEndUnixNano/1e6 - b.WindowEndUnixNano/1e6) })
		out[s] = slices.CompactFunc(l, func(a, b schemas.Verdict) bool { return a.WindowEndUnixNano/1e6 == b.WindowEndUnixNano/1e6 })
	}
	return out
}

func attrFloat(t *testing.T, e uitest.Element, name string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(e.Attrs[name], 64)
	if err != nil {
		t.Fatalf("attribute %s=%q: %v", name, e.Attrs[name], err)
	}
	return f
}

func checkPage(t *testing.T, c *testharness.Chromium, base, artifacts string, vs []schemas.Verdict, cmds []schemas.FuseCommand) {
	t.Helper()
	// The key of the latency-tail incident, and the canary of the drift
	// incident: whichever variants' keys carry those verdicts.
	var tailKey, driftKey schemas.Key
	for _, v := range vs {
		if v.Processor == "tail" && v.Key.Tenant == "acme" && v.Key.Service == "chat" && v.Key.Model == "gpt-4o-mini" && v.Status == schemas.StatusBreach {
			tailKey = v.Key
		}
		if v.Processor == "drift" && v.Key.Tenant == "globex" && v.Key.Model == "claude-3-5-haiku" && v.Status == schemas.StatusBreach {
			driftKey = v.Key
		}
	}
	if tailKey == (schemas.Key{}) || driftKey == (schemas.Key{}) {
		t.Fatalf("the run has no tail breach of acme/chat/gpt-4o-mini (%v) or no drift breach of globex's haiku (%v): %d verdicts", tailKey, driftKey, len(vs))
	}

	// The latency key: tail, QQ, burn rate and the others.
	u := base + "/ui/?" + keyQuery(tailKey)
	dom := c.DumpDOM(t, u, 4*time.Second)
	checkClean(t, dom)
	series := byKey(vs, tailKey)
	var tails, burns int
	for s, l := range series {
		kind := map[string]string{"tail": "tail", "burnrate": "burn", "drift": "", "decay": "other", "corrections": "other", "scaling": "other"}[s.processor]
		if kind == "" {
			continue
		}
		svgs := uitest.Elements(dom, "svg", map[string]string{"data-chart": kind, "data-slo": s.slo, "data-metric": s.metric})
		if len(svgs) != 1 {
			t.Errorf("%v: %d charts of kind %s, want 1", s, len(svgs), kind)
			continue
		}
		e := svgs[0]
		valued := 0
		for _, v := range l {
			if v.Status != schemas.StatusInsufficientData {
				valued++
			}
		}
		last := l[len(l)-1]
		if got := attrFloat(t, e, "data-points"); int(got) != len(l) {
			t.Errorf("%v: the chart has %v points, the run wrote %d evaluations", s, got, len(l))
		}
		if got := attrFloat(t, e, "data-valued"); int(got) != valued {
			t.Errorf("%v: %v points with a value, the run wrote %d", s, got, valued)
		}
		if got := attrFloat(t, e, "data-budget"); got != last.Threshold {
			t.Errorf("%v: budget line at %v, the latest verdict's threshold is %v", s, got, last.Threshold)
		}
		switch kind {
		case "tail":
			tails++
		case "burn":
			burns++
		}
		if kind != "tail" {
			continue
		}
		// The dots are the verdicts: same count, the band's points are
		// the evaluations with an interval.
		sec := chartMarkup(dom, e)
		if dots := uitest.Elements(sec, "circle", map[string]string{"class": "pt"}); len(dots) != len(l) {
			t.Errorf("%v: %d dots, want %d", s, len(dots), len(l))
		} else {
			for i, d := range dots {
				if attrFloat(t, d, "data-v") != l[i].Value || int64(attrFloat(t, d, "data-t")) != l[i].WindowEndUnixNano/1e6 {
					t.Errorf("%v: dot %d at (%s, %s), the verdict is (%d, %v)", s, i, d.Attrs["data-t"], d.Attrs["data-v"], l[i].WindowEndUnixNano/1e6, l[i].Value)
					break
				}
			}
		}
		if b := uitest.Elements(sec, "polyline", map[string]string{"class": "budget"}); len(b) != 1 || attrFloat(t, b[0], "data-value") != 15000 {
			t.Errorf("%v: budget line %v, want one at 15000 ms (the demo's budget)", s, b)
		}
		// The QQ plot of the latest fit.
		qq := uitest.Elements(dom, "svg", map[string]string{"data-chart": "qq", "data-slo": s.slo, "data-metric": s.metric})
		nex, _ := last.Detail("n_exceedances")
		xi, _ := last.Detail("xi")
		switch {
		case strings.HasPrefix(last.Method, "gpd_"):
			if len(qq) != 1 || int(attrFloat(t, qq[0], "data-n")) != int(nex) || int(attrFloat(t, qq[0], "data-points")) != min(int(nex), schemas.MaxEvidencePoints) || attrFloat(t, qq[0], "data-xi") != xi {
				t.Errorf("%v: QQ plot %v, want the latest fit's %v exceedances (at most %d points) and xi %v", s, qq, nex, schemas.MaxEvidencePoints, xi)
			} else if pts := uitest.Elements(chartMarkup(dom, qq[0]), "circle", map[string]string{"class": "qq"}); len(pts) != min(int(nex), schemas.MaxEvidencePoints) {
				t.Errorf("%v: %d QQ points drawn", s, len(pts))
			}
		default:
			if len(qq) != 0 {
				t.Errorf("%v: a QQ plot of an %s verdict", s, last.Method)
			}
		}
	}
	if tails == 0 || burns == 0 {
		t.Errorf("the page of %v shows %d tail and %d burn-rate charts, want both", tailKey, tails, burns)
	}
	checkFuse(t, dom, cmds)
	c.Screenshot(t, u, filepath.Join(artifacts, "ui-demo-latency.png"), 1400, 1900, 4*time.Second)

	// The canary key: the ECDFs and the KS distance of the latest verdict.
	u = base + "/ui/?" + keyQuery(driftKey)
	dom = c.DumpDOM(t, u, 4*time.Second)
	checkClean(t, dom)
	for s, l := range byKey(vs, driftKey) {
		if s.processor != "drift" {
			continue
		}
		last := l[len(l)-1]
		e := uitest.Elements(dom, "svg", map[string]string{"data-chart": "ecdf", "data-slo": s.slo, "data-metric": s.metric})
		if last.Status == schemas.StatusInsufficientData {
			continue
		}
		if len(e) != 1 {
			t.Fatalf("%v: %d ECDF charts, want 1", s, len(e))
		}
		if got := attrFloat(t, e[0], "data-ks"); got != last.Value {
			t.Errorf("%v: the chart marks D = %v, the latest verdict's is %v", s, got, last.Value)
		}
		nc, _ := last.Detail("n_current")
		nr, _ := last.Detail("n_reference")
		m := chartMarkup(dom, e[0])
		cur := uitest.Elements(m, "path", map[string]string{"class": "ecdf-current"})
		ref := uitest.Elements(m, "path", map[string]string{"class": "ecdf-reference"})
		if len(cur) != 1 || len(ref) != 1 || int(attrFloat(t, cur[0], "data-n")) != int(nc) || int(attrFloat(t, ref[0], "data-n")) != int(nr) {
			t.Errorf("%v: ECDFs %v %v, want n %v and %v", s, cur, ref, nc, nr)
		}
		if lbl := uitest.Elements(m, "text", map[string]string{"class": "ks-label"}); len(lbl) != 1 || !strings.HasPrefix(lbl[0].Text, "D = 0.") {
			t.Errorf("%v: KS label %v", s, lbl)
		}
	}
	c.Screenshot(t, u, filepath.Join(artifacts, "ui-demo-canary.png"), 1400, 1900, 4*time.Second)
}

// checkFuse compares the fuse timeline with the run's commands: one row
// per target, with as many markers as the target's distinct commands.
func checkFuse(t *testing.T, dom string, cmds []schemas.FuseCommand) {
	t.Helper()
	per := map[string]map[uint64]bool{}
	for _, c := range cmds {
		k := targetText(c.Target)
		if per[k] == nil {
			per[k] = map[uint64]bool{}
		}
		per[k][c.Version] = true
	}
	rows := uitest.Elements(dom, "g", map[string]string{"class": "target"})
	if len(rows) != len(per) || len(per) == 0 {
		t.Errorf("fuse timeline: %d rows, the run commanded %d targets", len(rows), len(per))
	}
	for _, r := range rows {
		if want := len(per[r.Attrs["data-target"]]); int(attrFloat(t, r, "data-commands")) != want {
			t.Errorf("fuse row %s: %s commands, the run wrote %d", r.Attrs["data-target"], r.Attrs["data-commands"], want)
		}
	}
}

// targetText is the page's keyText.
func targetText(k schemas.Key) string {
	parts := []string{k.Tenant, k.Service, k.Model}
	if k.Variant != "" {
		parts = append(parts, k.Variant)
	}
	for i, p := range parts {
		if p == "" {
			parts[i] = "∅"
		}
	}
	return strings.Join(parts, "/")
}

// chartMarkup returns the markup of the SVG element e (from its start tag
// to its </svg>).
func chartMarkup(dom string, e uitest.Element) string {
	key := `data-slo="` + e.Attrs["data-slo"] + `"`
	for i := 0; ; {
		j := strings.Index(dom[i:], "<svg ")
		if j < 0 {
			return ""
		}
		i += j
		end := strings.Index(dom[i:], "</svg>")
		if end < 0 {
			return ""
		}
		tag := dom[i : i+strings.Index(dom[i:], ">")]
		if strings.Contains(tag, key) && strings.Contains(tag, `data-chart="`+e.Attrs["data-chart"]+`"`) && strings.Contains(tag, `data-metric="`+e.Attrs["data-metric"]+`"`) {
			return dom[i : i+end]
		}
		i += end
	}
}

// checkClean fails on a page that shows NaN, undefined or Infinity.
func checkClean(t *testing.T, dom string) {
	t.Helper()
	if len(uitest.Elements(dom, "body", map[string]string{"data-state": "ready"})) != 1 {
		t.Fatalf("the page is not ready:\n%.2000s", dom)
	}
	for _, tag := range []string{"text", "p", "figcaption", "span", "a", "div", "h2"} {
		for _, e := range uitest.Elements(dom, tag, nil) {
			for _, bad := range []string{"NaN", "undefined", "Infinity"} {
				if strings.Contains(e.Text, bad) {
					t.Errorf("the page shows %q: <%s> %q", bad, tag, e.Text)
				}
			}
		}
	}
	for _, bad := range []string{`="NaN"`, `NaN,`, `,NaN`, `="undefined"`, `="Infinity"`} {
		if strings.Contains(dom, bad) {
			t.Errorf("the page's markup holds %s", bad)
		}
	}
}
