package pipeline

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// KeyedDecoder decodes keyed-topic records for ingest: the
// *engine.KeyedRecord is in Record.Payload. It is the one place the Kafka
// client's record meets the engine's plain one.
var KeyedDecoder ingest.Decoder = ingest.DecoderFunc(func(r *kgo.Record, out *ingest.Record) error {
	rec := &engine.KeyedRecord{}
	if err := engine.DecodeKeyedRecord(r.Offset, Headers(r.Headers), r.Value, rec); err != nil {
		return err
	}
	out.Payload = rec
	return nil
})

// Headers converts a Kafka record's headers to the plain headers of
// package schemas.
func Headers(hs []kgo.RecordHeader) []schemas.Header {
	out := make([]schemas.Header, len(hs))
	for i, h := range hs {
		out[i] = schemas.Header(h)
	}
	return out
}
