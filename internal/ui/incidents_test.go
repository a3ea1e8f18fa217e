package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/internal/ui"
	"github.com/fusebox-dev/fusebox/internal/ui/uitest"
	"github.com/fusebox-dev/fusebox/schemas"
)

func incidentRecords() []schemas.Incident {
	first := int64(1_800_000_420) * 1e9
	id := schemas.IncidentIDOf("latency", "model", "claude-3-5-haiku", first)
	rec := func(at int64, st schemas.IncidentStatus, b, h int64) schemas.Incident {
		return schemas.Incident{ID: schemas.IncidentRecordID(id, at), IncidentID: id, SLO: "latency", Processor: "tail", Dimension: "model",
			Value: "claude-3-5-haiku", Status: st, Breaching: b, Healthy: h, OtherHealthy: 72, PValue: 3.2e-14,
			FirstUnixNano: first, LastUnixNano: at, AtUnixNano: at, Keys: []schemas.Key{{Tenant: "acme", Model: "claude-3-5-haiku"}}}
	}
	kid := schemas.IncidentIDOf("latency", "key", "acme/chat/llama/baseline", first+60e9)
	return []schemas.Incident{
		rec(first, schemas.IncidentOpened, 19, 5),
		rec(first+60e9, schemas.IncidentGrowing, 24, 0),
		{ID: schemas.IncidentRecordID(kid, first+60e9), IncidentID: kid, SLO: "latency", Processor: "tail", Dimension: "key",
			Value: "acme/chat/llama/baseline", Status: schemas.IncidentOpened, Breaching: 1, OtherBreaching: 24, OtherHealthy: 71, PValue: 1,
			FirstUnixNano: first + 60e9, LastUnixNano: first + 60e9, AtUnixNano: first + 60e9},
		rec(first+30e9, schemas.IncidentOpened, 1, 1), // an older record arriving late: ignored
	}
}

// TestIncidentsAPI: the newest record of each incident, newest opened
// first, counts as keys; bounded by MaxIncidents, closed ones go first.
func TestIncidentsAPI(t *testing.T) {
	st, _ := ui.NewStore(ui.Config{MaxIncidents: 2})
	_ = st.Write(context.Background(), schemas.Output{Incidents: incidentRecords()})
	srv := httptest.NewServer(st.Handler())
	defer srv.Close()
	var r ui.IncidentsResponse
	getJSON(t, srv.URL+"/api/ui/incidents", &r)
	if len(r.Incidents) != 2 {
		t.Fatalf("%d incidents, want 2: %+v", len(r.Incidents), r.Incidents)
	}
	if r.Incidents[0].Dimension != "key" || r.Incidents[1].Dimension != "model" || r.Incidents[1].Status != "growing" ||
		r.Incidents[1].Breaching != 24 || r.Incidents[1].Keys != 24 || r.Incidents[1].Others != 72 {
		t.Fatalf("incidents %+v", r.Incidents)
	}
	// A third incident evicts the closed one first.
	closed := r.Incidents[0]
	rec := incidentRecords()[2]
	rec.Status, rec.AtUnixNano, rec.ID = schemas.IncidentClosed, rec.AtUnixNano+60e9, "c"
	third := incidentRecords()[0]
	third.IncidentID, third.ID, third.FirstUnixNano = "other", "o", third.FirstUnixNano+120e9
	_ = st.Write(context.Background(), schemas.Output{Incidents: []schemas.Incident{rec, third}})
	getJSON(t, srv.URL+"/api/ui/incidents", &r)
	if len(r.Incidents) != 2 || r.Incidents[0].ID != "other" || r.Incidents[1].Dimension != "model" {
		t.Fatalf("after the closed %s and a third: %+v", closed.ID, r.Incidents)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestPageIncidentsInChromium: the page lists the incidents with their
// level, status, counts and p-value.
func TestPageIncidentsInChromium(t *testing.T) {
	c := testharness.StartChromium(t)
	st, _ := ui.NewStore(ui.Config{})
	_ = st.Write(context.Background(), schemas.Output{Incidents: incidentRecords()})
	srv := httptest.NewServer(st.Handler())
	defer srv.Close()
	dom := c.DumpDOM(t, srv.URL+"/ui/", 3*time.Second)
	checkClean(t, dom)
	ps := uitest.Elements(uitest.Section(dom, "section", "incidents"), "p", nil)
	if len(ps) != 2 {
		t.Fatalf("incidents listed: %v", ps)
	}
	if ps[0].Attrs["data-dimension"] != "key" || ps[1].Attrs["data-dimension"] != "model" || ps[1].Attrs["data-value"] != "claude-3-5-haiku" ||
		ps[1].Attrs["data-status"] != "growing" || !strings.Contains(ps[1].Text, "24 of 24 keys breach (others 0 of 72)") || !strings.Contains(ps[1].Text, "p = ") {
		t.Fatalf("incident entries: %+v", ps)
	}
}
