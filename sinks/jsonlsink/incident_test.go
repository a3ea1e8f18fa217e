package jsonlsink_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
)

func TestIncidentsWrittenAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s, err := jsonlsink.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id := schemas.IncidentIDOf("latency", "tenant", "globex", 60e9)
	incs := []schemas.Incident{
		{ID: schemas.IncidentRecordID(id, 60e9), IncidentID: id, SLO: "latency", Processor: "tail", Dimension: "tenant", Value: "globex",
			Status: schemas.IncidentOpened, Breaching: 11, Healthy: 5, OtherHealthy: 80, PValue: 1.49e-9, FirstUnixNano: 60e9, LastUnixNano: 60e9, AtUnixNano: 60e9,
			Keys: []schemas.Key{{Tenant: "globex", Service: "chat", Model: "gpt-4o", Variant: "baseline"}}},
		{ID: schemas.IncidentRecordID(id, 120e9), IncidentID: id, SLO: "latency", Processor: "tail", Dimension: "tenant", Value: "globex",
			Status: schemas.IncidentClosed, OtherHealthy: 96, Healthy: 16, PValue: 1.49e-9, FirstUnixNano: 60e9, LastUnixNano: 60e9, AtUnixNano: 120e9, Keys: []schemas.Key{}},
	}
	if err := s.Write(context.Background(), schemas.Output{Incidents: incs}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := jsonlsink.ReadIncidents(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, incs) {
		t.Fatalf("read back %+v\nwant %+v", got, incs)
	}
	// The verdict reader skips incident lines.
	if vs, cs, err := jsonlsink.Read(data); err != nil || len(vs)+len(cs) != 0 {
		t.Fatalf("Read of incident lines: %d verdicts, %d commands, %v", len(vs), len(cs), err)
	}
}
