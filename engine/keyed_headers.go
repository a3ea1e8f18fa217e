package engine

import (
	"errors"

	"github.com/fusebox-dev/fusebox/schemas"
)

// ErrBadKeyedRecord wraps every problem decoding a keyed record.
var ErrBadKeyedRecord = errors.New("engine: bad keyed record")

// SourceRef names the source record a keyed record came from.
type SourceRef = schemas.SourceRef

// DecodeKeyedRecord decodes a keyed-topic record — its offset in the keyed
// partition, its headers and its value, in the format of package schemas
// (ParseKeyedHeaders, DecodeKeyedBatch) — into rec, reusing rec's span and
// correction slices.
func DecodeKeyedRecord(offset int64, headers []schemas.Header, value []byte, rec *KeyedRecord) error {
	*rec = KeyedRecord{Offset: offset, Spans: rec.Spans[:0], Corrections: rec.Corrections[:0]}
	h, err := schemas.ParseKeyedHeaders(headers)
	if err != nil {
		return errors.Join(ErrBadKeyedRecord, err)
	}
	rec.Source, rec.SourceMaxEventTime, rec.SourceTopics, rec.Idle, rec.Deployment = h.Source, h.SourceMaxEventTime, h.SourceTopics, h.Idle, h.Deployment
	rec.IdleFor, rec.SeenAt = h.IdleForNanos, h.SeenAtUnixNano
	if rec.Idle || len(value) == 0 {
		return nil
	}
	rec.Spans, rec.Corrections, err = schemas.DecodeKeyedBatch(value, rec.Spans, rec.Corrections)
	if err != nil {
		return errors.Join(ErrBadKeyedRecord, err)
	}
	return nil
}
