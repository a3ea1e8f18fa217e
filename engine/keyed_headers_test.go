package engine_test

import (
	"errors"
	"math"
	"testing"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/schemas"
)

func TestDecodeKeyedRecordReadsTheSchemasFormat(t *testing.T) {
	h := schemas.KeyedHeaders{Source: schemas.SourceRef{Topic: "otlp_spans", Partition: 2, Offset: 41, Part: 1},
		SourceMaxEventTime: 1_800_000_000e9, SourceTopics: "otlp_spans:6"}
	spans := []schemas.Span{{Key: schemas.Key{Tenant: "acme", Model: "m"}, StartUnixNano: 1_800_000_000e9 - 1e6, EndUnixNano: 1_800_000_000e9, DurationMs: 1}}
	var rec engine.KeyedRecord
	if err := engine.DecodeKeyedRecord(9, schemas.AppendKeyedHeaders(nil, h), schemas.AppendKeyedBatch(nil, spans, nil), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Offset != 9 || rec.Source != h.Source || rec.SourceMaxEventTime != h.SourceMaxEventTime || rec.SourceTopics != h.SourceTopics ||
		rec.Idle || len(rec.Spans) != 1 || rec.Spans[0].Key != spans[0].Key {
		t.Fatalf("decoded %+v", rec)
	}

	// An idle marker has no value; a heartbeat neither; no source max.
	h = schemas.KeyedHeaders{Source: h.Source, SourceMaxEventTime: math.MinInt64, Idle: true}
	if err := engine.DecodeKeyedRecord(10, schemas.AppendKeyedHeaders(nil, h), nil, &rec); err != nil || !rec.Idle || len(rec.Spans) != 0 || rec.SourceMaxEventTime != math.MinInt64 {
		t.Fatalf("idle marker: %+v, %v", rec, err)
	}

	for name, bad := range map[string]struct {
		hs    []schemas.Header
		value []byte
	}{
		"no source header": {nil, nil},
		"bad batch":        {schemas.AppendKeyedHeaders(nil, schemas.KeyedHeaders{Source: h.Source, SourceMaxEventTime: math.MinInt64}), []byte{99, 1, 0}},
	} {
		if err := engine.DecodeKeyedRecord(11, bad.hs, bad.value, &rec); !errors.Is(err, engine.ErrBadKeyedRecord) {
			t.Errorf("%s: error %v, want ErrBadKeyedRecord", name, err)
		}
	}
}
