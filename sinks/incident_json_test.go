package sinks_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

func sampleIncident() schemas.Incident {
	id := schemas.IncidentIDOf("latency-p999", "model", "claude-3-5-haiku", 1_700_000_000_000_000_000)
	return schemas.Incident{
		ID: schemas.IncidentRecordID(id, 1_700_000_060_000_000_000), IncidentID: id, SLO: "latency-p999", Processor: "tail",
		Dimension: "model", Value: "claude-3-5-haiku", Status: schemas.IncidentGrowing,
		Breaching: 19, Healthy: 5, OtherBreaching: 0, OtherHealthy: 72, PValue: 3.18e-14,
		FirstUnixNano: 1_700_000_000_000_000_000, LastUnixNano: 1_700_000_060_000_000_000, AtUnixNano: 1_700_000_060_000_000_000,
		Keys: []schemas.Key{{Tenant: "acme", Service: "chat", Model: "claude-3-5-haiku", Variant: "baseline"}}, MergedInto: id, Partial: true, ConfigVersion: "v1",
	}
}

// The JSON form round-trips, and its fields are exactly the schema's
// properties, the required ones present.
func TestIncidentJSONFollowsItsSchema(t *testing.T) {
	inc := sampleIncident()
	b, err := sinks.MarshalIncidentJSON(nil, &inc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := sinks.UnmarshalIncidentJSON(b)
	if err != nil || !reflect.DeepEqual(back, inc) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, back, inc)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../schemas/incident.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	var fields, props []string
	for f := range got {
		fields = append(fields, f)
	}
	for p := range schema.Properties {
		props = append(props, p)
	}
	slices.Sort(fields)
	slices.Sort(props)
	if !slices.Equal(fields, props) {
		t.Errorf("JSON fields %v, schema properties %v", fields, props)
	}
	for _, r := range schema.Required {
		if _, ok := got[r]; !ok {
			t.Errorf("required %q missing from %s", r, b)
		}
	}
	inc.PValue = 1.5
	if _, err := sinks.MarshalIncidentJSON(nil, &inc); err == nil {
		t.Error("a p-value of 1.5 was encoded")
	}
}
