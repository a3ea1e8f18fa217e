package engine

import "github.com/fusebox-dev/fusebox/ingest/batch"

// KeyedDecoder is the batch.Decoder of the keyed topic: it decodes each
// record with DecodeKeyedRecord into a new *KeyedRecord, which it puts in
// Record.Payload, where the keyed stage's handler (Keyed.Handler) takes it.
// A record that does not decode is dead-lettered by ingest as malformed
// (the error wraps ErrBadKeyedRecord and the schemas sentinel).
var KeyedDecoder batch.Decoder = batch.DecoderFunc(decodeKeyed)

func decodeKeyed(offset int64, headers []batch.Header, value []byte, out *batch.Record) error {
	rec := &KeyedRecord{}
	if err := DecodeKeyedRecord(offset, headers, value, rec); err != nil {
		return err
	}
	if !out.Timestamp.IsZero() && out.Timestamp.UnixMilli() > 0 {
		rec.Timestamp = out.Timestamp.UnixNano()
	}
	out.Payload = rec
	return nil
}
