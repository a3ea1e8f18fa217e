package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/ingest/batch"
	"github.com/fusebox-dev/fusebox/processors/incident"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestIncidentsCountAndLogALaggingPartition: with two keyed partitions
// and only partition 0's summaries arriving, the stage (max_wait 2)
// decides the oldest boundary without partition 1 once two more are
// waiting; the runner counts each such decision (Partial, the
// fusebox_incident_partial_decisions_total counter) and logs a WARN that
// names the lagging partition — a silent partition is loud, not a stall.
func TestIncidentsCountAndLogALaggingPartition(t *testing.T) {
	var logs bytes.Buffer
	in, err := engine.NewIncidents(engine.IncidentsConfig{
		New:   func() (engine.IncidentStage, error) { return incident.New(incident.Config{Partitions: 2, MaxWait: 2}) },
		Store: memStore{}, Sinks: []engine.Sink{&captureSink{}}, CheckpointEvery: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := in.Handler("fusebox.summaries", 0)
	if _, err := h.(batch.Starter).Start(ctx, -1); err != nil {
		t.Fatal(err)
	}
	key := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}
	for i := int64(1); i <= 6; i++ {
		s := &schemas.EvalSummary{SLO: "lat", Processor: "tail", AtUnixNano: i * int64(time.Minute), Partition: 0,
			Keys: []schemas.SummaryKey{{Key: key, Status: schemas.StatusOK}}}
		if err := h.Handle(ctx, &batch.Batch{Records: []batch.Record{{Offset: i, Payload: s}}}); err != nil {
			t.Fatal(err)
		}
	}
	sums, _ := in.Counts()
	if sums != 6 {
		t.Errorf("summaries applied %d, want 6", sums)
	}
	// Boundaries 1–4 are decided without partition 1 (each once two
	// newer ones wait); 5 and 6 still wait.
	if got := in.Partial(); got != 4 {
		t.Errorf("partial decisions %d, want 4", got)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "without keyed partitions [1]") {
		t.Errorf("no WARN naming partition 1:\n%s", l)
	}
}
