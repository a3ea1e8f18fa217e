package ui_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/internal/ui"
	"github.com/fusebox-dev/fusebox/internal/ui/uitest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestPageEmptyInChromium loads the page of an empty store in headless
// Chromium: every section says "no data yet", nothing reads NaN or
// undefined; then of a store with one tail verdict: its chart appears and
// the other sections still say why they are empty.
func TestPageEmptyInChromium(t *testing.T) {
	c := testharness.StartChromium(t)
	st, err := ui.NewStore(ui.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st.Handler())
	defer srv.Close()

	dom := c.DumpDOM(t, srv.URL+"/ui/", 3*time.Second)
	checkClean(t, dom)
	if len(uitest.Elements(dom, "body", map[string]string{"data-state": "ready"})) != 1 {
		t.Fatalf("the page never got ready:\n%s", dom)
	}
	for _, id := range []string{"incidents", "tail", "drift", "qq", "burn", "other", "fuse"} {
		sec := uitest.Section(dom, "section", id)
		if ps := uitest.Elements(sec, "p", map[string]string{"class": "empty"}); len(ps) != 1 || !strings.Contains(ps[0].Text, "no ") {
			t.Errorf("section %s of an empty store: %v, want one \"no data yet\" note", id, ps)
		}
		if len(uitest.Elements(sec, "svg", nil)) != 0 {
			t.Errorf("section %s of an empty store draws a chart", id)
		}
	}
	if nav := uitest.Elements(dom, "p", map[string]string{"class": "empty"}); len(nav) == 0 || !strings.Contains(nav[0].Text, "no data yet") {
		t.Errorf("the key list of an empty store: %v", nav)
	}

	k := schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "baseline"}
	_ = st.Write(context.Background(), schemas.Output{Verdicts: []schemas.Verdict{{
		ID: "x", Processor: "tail", SLO: "latency", Metric: "p999_duration_ms", Key: k, WindowEndUnixNano: 1e12,
		Status: schemas.StatusInsufficientData, Method: "none", Threshold: 15000, N: 12,
	}}})
	dom = c.DumpDOM(t, srv.URL+"/ui/", 3*time.Second)
	checkClean(t, dom)
	svgs := uitest.Elements(dom, "svg", map[string]string{"data-chart": "tail"})
	if len(svgs) != 1 || svgs[0].Attrs["data-points"] != "1" || svgs[0].Attrs["data-valued"] != "0" || svgs[0].Attrs["data-budget"] != "15000" {
		t.Fatalf("one insufficient_data tail verdict: charts %v", svgs)
	}
	if qq := uitest.Elements(uitest.Section(dom, "section", "qq"), "p", map[string]string{"data-empty": "qq"}); len(qq) != 1 {
		t.Errorf("no GPD fit yet: want a note in the QQ section, got %v", qq)
	}
	dir := testharness.ArtifactsDir(t)
	c.Screenshot(t, srv.URL+"/ui/", filepath.Join(dir, "ui-nodata.png"), 1280, 900, 3*time.Second)
}

// checkClean fails on a page that shows NaN, undefined or Infinity.
func checkClean(t *testing.T, dom string) {
	t.Helper()
	for _, bad := range []string{"NaN", "undefined", "Infinity", "null"} {
		for _, e := range append(uitest.Elements(dom, "text", nil), append(uitest.Elements(dom, "p", nil), uitest.Elements(dom, "figcaption", nil)...)...) {
			if strings.Contains(e.Text, bad) {
				t.Errorf("the page shows %q: %q", bad, e.Text)
			}
		}
		if strings.Contains(dom, `="`+bad+`"`) && bad != "null" {
			t.Errorf("an attribute is %q", bad)
		}
	}
}

// TestPageNoSamplesInChromium: a tail SLO whose calls carry none of its
// metric (a no_samples verdict) says so on the page — the metric, the
// calls, the evaluations — instead of a bare "insufficient data".
func TestPageNoSamplesInChromium(t *testing.T) {
	c := testharness.StartChromium(t)
	st, err := ui.NewStore(ui.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st.Handler())
	defer srv.Close()
	k := schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "baseline"}
	_ = st.Write(context.Background(), schemas.Output{Verdicts: []schemas.Verdict{{
		ID: "y", Processor: "tail", SLO: "ttft", Metric: "p999_ttft_ms", Key: k, WindowEndUnixNano: 1e12,
		Status: schemas.StatusInsufficientData, Method: "no_samples", Threshold: 2000,
		Details: []schemas.Detail{{Name: "calls", Value: 240}, {Name: "evaluations", Value: 5}, {Name: "no_samples_evaluations", Value: 5}},
	}}})
	dom := c.DumpDOM(t, srv.URL+"/ui/", 3*time.Second)
	checkClean(t, dom)
	sec := uitest.Section(dom, "section", "tail")
	found := ""
	for _, e := range uitest.Elements(sec, "span", map[string]string{"class": "note"}) {
		if strings.Contains(e.Text, "no samples of") {
			found = e.Text
		}
	}
	for _, want := range []string{"no samples of p999_ttft_ms", "240 calls", "5 evaluations"} {
		if !strings.Contains(found, want) {
			t.Errorf("the tail section's note %q lacks %q", found, want)
		}
	}
}

// TestPageTenantMatrixInChromium loads the page of a store holding the hand
// fixture (handOutput) with ?objective=0.9 in headless Chromium: the
// matrix has a cell per tenant and SLO with the values computed by hand
// (wantHandMatrix), coloured by the budget left, and "–" where a tenant has
// no verdict of an SLO; an empty store says so instead. (The matrix spans
// the page above the key list: Section reads it up to the next section.)
func TestPageTenantMatrixInChromium(t *testing.T) {
	c := testharness.StartChromium(t)
	st, err := ui.NewStore(ui.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st.Handler())
	defer srv.Close()
	dom := c.DumpDOM(t, srv.URL+"/ui/", 3*time.Second)
	sec := uitest.Section(dom, "section", "tenants")
	if ps := uitest.Elements(sec, "p", map[string]string{"data-empty": "tenants"}); len(ps) != 1 || !strings.Contains(ps[0].Text, "no SLO verdicts") {
		t.Errorf("the matrix of an empty store: %v, want a \"no SLO verdicts\" note", ps)
	}

	_ = st.Write(context.Background(), handOutput())
	url := srv.URL + "/ui/?objective=0.9"
	dom = c.DumpDOM(t, url, 3*time.Second)
	checkClean(t, dom)
	sec = uitest.Section(dom, "section", "tenants")
	tables := uitest.Elements(sec, "table", map[string]string{"data-chart": "tenants"})
	if len(tables) != 1 || tables[0].Attrs["data-rows"] != "5" {
		t.Fatalf("want one matrix of 5 cells, got %v\n%s", tables, sec)
	}
	cells := uitest.Elements(sec, "td", map[string]string{"class": "cell"})
	if len(cells) != len(wantHandMatrix) {
		t.Fatalf("%d cells, want %d: %v", len(cells), len(wantHandMatrix), cells)
	}
	level := func(r ui.TenantSLO) string {
		switch {
		case r.BudgetRemaining >= 0.5:
			return "budget-ok"
		case r.BudgetRemaining >= 0:
			return "budget-warn"
		}
		return "budget-breach"
	}
	// Cells come row by row (tenants), SLOs sorted: the order of wantHandMatrix.
	for i, w := range wantHandMatrix {
		e := cells[i]
		num := func(name string) float64 {
			v, err := strconv.ParseFloat(e.Attrs[name], 64)
			if err != nil {
				t.Errorf("cell %s/%s: %s = %q", w.Tenant, w.SLO, name, e.Attrs[name])
			}
			return v
		}
		if e.Attrs["data-tenant"] != w.Tenant || e.Attrs["data-slo"] != w.SLO || !e.Has(level(w)) ||
			!near(num("data-compliance"), w.Compliance) || !near(num("data-budget-remaining"), w.BudgetRemaining) ||
			num("data-minutes-out") != w.MinutesOut || int(num("data-breach-episodes")) != w.BreachEpisodes || int(num("data-incidents")) != w.Incidents {
			t.Errorf("cell %d: %v, want %+v (%s)", i, e.Attrs, w, level(w))
		}
	}
	if got := strings.TrimSpace(cells[1].Text); got != "55.56%" {
		t.Errorf("acme latency compliance shows %q, want 55.56%% (5 of 9 minutes)", got)
	}
	var notes []string
	for _, n := range uitest.Elements(sec, "span", map[string]string{"class": "note"}) {
		notes = append(notes, n.Text)
	}
	if len(notes) != 5 || notes[1] != "budget -344.4% left · 4 min out · 3 episodes · 3 incidents" {
		t.Errorf("cell notes %q", notes)
	}
	if none := uitest.Elements(sec, "td", map[string]string{"class": "none"}); len(none) != 3 {
		t.Errorf("%d empty cells, want 3 (acme corrections, beta availability, beta quality)", len(none))
	}
	c.Screenshot(t, url, filepath.Join(testharness.ArtifactsDir(t), "ui-tenants.png"), 1280, 900, 3*time.Second)
}
