package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Parts of a dead letter that shrink drops, as named in its log line and
// in Stats.DLQOmitted (fusebox_dlq_omitted_total{part}).
const (
	OmittedValue   = "value"
	OmittedHeaders = "headers"
	OmittedKey     = "key"
	// OmittedDetails is fusebox's own headers cut (HeaderTrimmed).
	OmittedDetails = "details"
)

// trimmedErrorBytes caps the error message of a trimmed dead letter.
const trimmedErrorBytes = 256

// shrink replaces w's record, refused as too large, by a smaller copy and
// says which part it dropped; ok is false when nothing is left to drop.
//
// The largest of the three parts that came from the source record goes
// first — its value, its own headers (all of them, as one part), its key —
// so that a record with 2 MB of headers keeps its value, and a 2 MB value
// keeps the team's trace headers. Each drop leaves a header that says what
// went and how big it was (HeaderValueOmitted with HeaderValueSHA256,
// HeaderHeadersOmitted with HeaderHeadersOmittedBytes, HeaderKeyOmitted).
// With all three gone, fusebox's own headers are cut once (HeaderTrimmed);
// they are then a few hundred bytes, under any DLQ topic's limit but a
// deliberately tiny one.
func (w *dlqWrite) shrink() (part string, ok bool) {
	r := w.rec
	var ownBytes int
	for _, h := range r.Headers[:w.own] {
		ownBytes += len(h.Key) + len(h.Value)
	}
	next := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value}
	headers := r.Headers
	switch {
	case len(r.Value) > 0 && len(r.Value) >= ownBytes && len(r.Value) >= len(r.Key):
		sum := sha256.Sum256(r.Value)
		next.Value = nil
		headers = appendHeaders(headers,
			HeaderValueOmitted, strconv.Itoa(len(r.Value)),
			HeaderValueSHA256, hex.EncodeToString(sum[:]))
		part = OmittedValue
	case w.own > 0 && ownBytes >= len(r.Key):
		headers = appendHeaders(headers[w.own:],
			HeaderHeadersOmitted, strconv.Itoa(w.own),
			HeaderHeadersOmittedBytes, strconv.Itoa(ownBytes))
		w.own = 0
		part = OmittedHeaders
	case len(r.Key) > 0 && len(r.Key) > len(w.src.key()):
		// Replaced, not dropped: a compacted DLQ topic refuses keyless
		// records.
		next.Key = []byte(w.src.key())
		headers = appendHeaders(headers, HeaderKeyOmitted, strconv.Itoa(len(r.Key)))
		part = OmittedKey
	case !w.trimmed:
		headers = make([]kgo.RecordHeader, 0, len(r.Headers)+1)
		for _, h := range r.Headers {
			switch h.Key {
			case HeaderInvalidSpan:
				continue
			case HeaderError:
				h.Value = []byte(clip(string(h.Value), trimmedErrorBytes))
			}
			headers = append(headers, h)
		}
		headers = appendHeaders(headers, HeaderTrimmed, "true")
		w.trimmed = true
		part = OmittedDetails
	default:
		return "", false
	}
	next.Headers = headers
	w.rec = next
	return part, true
}

// key is the short key a dead letter whose key was too large gets:
// "<topic>/<partition>/<offset>" of its source record.
func (s source) key() string {
	return s.topic + "/" + strconv.Itoa(int(s.partition)) + "/" + strconv.FormatInt(s.offset, 10)
}

// appendHeaders returns h with the key/value pairs kv appended, never
// writing into h's backing array (the refused record may still hold it).
func appendHeaders(h []kgo.RecordHeader, kv ...string) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, len(h), len(h)+len(kv)/2)
	copy(out, h)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}
